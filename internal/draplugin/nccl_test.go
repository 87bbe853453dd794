package draplugin_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/google/go-cmp/cmp"
)

// ncclOf keeps the NCCL variables of a CDI env edit.
func ncclOf(env []string) []string {
	var out []string
	for _, e := range env {
		if strings.HasPrefix(e, "NCCL_") && !strings.HasPrefix(e, "NCCL_IB_HCA=") {
			out = append(out, e)
		}
	}
	return out
}

// TestPrepareSetsNCCLCrossNICFromPublishedLeaves: a claim whose devices
// each sit under a leaf of their own, as the railyard.io/leaf published
// with them says (the agent's SetLeaves, from its Node's LLDP
// neighbors), gets NCCL_CROSS_NIC=0 without any ncclCrossNIC; one whose
// devices share a leaf gets none. The CDI spec sets none of Railyard's
// defaults (NCCL_IB_ROCE_VERSION_NUM, NCCL_SOCKET_IFNAME, ...): CDI edits
// would win over the pod's own variables.
func TestPrepareSetsNCCLCrossNICFromPublishedLeaves(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	nics := n.topo(t).NICs
	leaves := func(each bool) map[string]string {
		m := map[string]string{}
		for _, nic := range nics {
			m[nic.Name()] = "tor-1"
			if each {
				m[nic.Name()] = "leaf-" + nic.PCI
			}
		}
		return m
	}
	for _, c := range []struct {
		name string
		each bool
		uid  string
		vfs  []string
		want []string
	}{
		{"a leaf per rail", true, uidA, []string{"0000:18:00.1", "0000:40:00.1"}, []string{"NCCL_CROSS_NIC=0"}},
		{"one leaf for every rail", false, "0f1e2d3c-aaaa-4bbb-8ccc-0000000000d2", []string{"0000:18:00.2", "0000:40:00.2"}, nil},
	} {
		if _, err := d.SetLeaves(ctx, leaves(c.each)); err != nil {
			t.Fatal(err)
		}
		cl := claim(t, c.uid, nic(c.vfs[0], "nic0"), nic(c.vfs[1], "nic1"))
		res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{cl})
		if res[cl.UID].Err != nil {
			t.Fatalf("%s: %v", c.name, res[cl.UID].Err)
		}
		for i, dev := range n.spec(t, cl.UID).Devices {
			if diff := cmp.Diff(c.want, ncclOf(dev.ContainerEdits.Env)); diff != "" {
				t.Errorf("%s: device %d's NCCL variables (-want +got):\n%s", c.name, i, diff)
			}
			if !slices.ContainsFunc(dev.ContainerEdits.Env, func(e string) bool { return strings.HasPrefix(e, "NCCL_IB_HCA==") }) {
				t.Errorf("%s: device %d has no NCCL_IB_HCA: %q", c.name, i, dev.ContainerEdits.Env)
			}
		}
	}
}

// TestPrepareSetsTheOperatorsNCCLProfile: the configured fabric profile
// and socket interface reach every CDI device of a claim.
func TestPrepareSetsTheOperatorsNCCLProfile(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	n.nccl.Profile = "adaptive-routing"
	eth0 := "=eth0"
	n.nccl.SocketIfname = &eth0
	ctx := context.Background()
	d := n.driver(t)
	cl := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{cl}); res[cl.UID].Err != nil {
		t.Fatal(res[cl.UID].Err)
	}
	want := []string{"NCCL_IB_ADAPTIVE_ROUTING=1", "NCCL_SOCKET_IFNAME==eth0"}
	if diff := cmp.Diff(want, ncclOf(n.spec(t, cl.UID).Devices[0].ContainerEdits.Env)); diff != "" {
		t.Errorf("NCCL variables (-want +got):\n%s", diff)
	}
}
