package containerdev

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// TestNewOptions: rdma_cm is on unless set off; umad and issm only when
// asked (the one rule the device plugin, late binding and DRA share).
func TestNewOptions(t *testing.T) {
	t.Parallel()
	on, off := true, false
	for _, c := range []struct {
		name       string
		rdmaCM     *bool
		umad, issm bool
		want       Options
	}{
		{"unset", nil, false, false, Options{RDMACM: true}},
		{"on", &on, true, false, Options{RDMACM: true, UMAD: true}},
		{"off", &off, false, true, Options{ISSM: true}},
	} {
		if diff := cmp.Diff(c.want, NewOptions(c.rdmaCM, c.umad, c.issm)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestNodes: the verbs node first, then rdma_cm, umad, issm as asked;
// names a port lacks are left out, and rdma_cm stays when the verbs node
// is unknown (late binding's spec of a device that left the view).
func TestNodes(t *testing.T) {
	t.Parallel()
	all := Options{RDMACM: true, UMAD: true, ISSM: true}
	for _, c := range []struct {
		name               string
		o                  Options
		uverbs, umad, issm string
		want               []string
	}{
		{"all", all, "uverbs3", "umad3", "issm3", []string{"uverbs3", "rdma_cm", "umad3", "issm3"}},
		{"default", Options{RDMACM: true}, "uverbs3", "umad3", "issm3", []string{"uverbs3", "rdma_cm"}},
		{"verbs only", Options{}, "uverbs3", "umad3", "issm3", []string{"uverbs3"}},
		{"port without MAD nodes", all, "uverbs3", "", "", []string{"uverbs3", "rdma_cm"}},
		{"no verbs node", Options{RDMACM: true}, "", "", "", []string{"rdma_cm"}},
		{"nothing", Options{}, "", "", "", nil},
	} {
		if diff := cmp.Diff(c.want, c.o.Nodes(c.uverbs, c.umad, c.issm)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestPaths: a node is at /dev/infiniband/<name> in the container and
// below the dev root on the host; CDI nodes carry both, rw.
func TestPaths(t *testing.T) {
	t.Parallel()
	if got := ContainerPath("uverbs3"); got != "/dev/infiniband/uverbs3" {
		t.Errorf("ContainerPath = %q", got)
	}
	if got := HostPath("/host/dev", "rdma_cm"); got != "/host/dev/infiniband/rdma_cm" {
		t.Errorf("HostPath = %q", got)
	}
	want := []*cdispec.DeviceNode{
		{Path: "/dev/infiniband/uverbs3", HostPath: "/dev/infiniband/uverbs3", Permissions: "rw"},
		{Path: "/dev/infiniband/rdma_cm", HostPath: "/dev/infiniband/rdma_cm", Permissions: "rw"},
	}
	if diff := cmp.Diff(want, CDINodes("/dev", []string{"uverbs3", "rdma_cm"})); diff != "" {
		t.Errorf("CDINodes (-want +got):\n%s", diff)
	}
	for node, want := range map[string]string{"uverbs12": "uverbs", "rdma_cm": "rdma_cm", "umad0": "umad", "issm7": "issm"} {
		if got := Kind(node); got != want {
			t.Errorf("Kind(%q) = %q, want %q", node, got, want)
		}
	}
}
