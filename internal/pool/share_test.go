package pool

import (
	"context"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

// TestSharedPoolOnGeneratedDGXH100: a shared pool over two NDR PFs of the
// generated DGX H100 tree advertises sharedLimit shares of each, named by
// the PF, with the PF's RDMA and verbs devices, rail and health.
func TestSharedPoolOnGeneratedDGXH100(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	p := v1alpha1.Pool{Name: "railyard.io/shared", DeviceKind: "shared", SharedLimit: ptr(3),
		Selectors: v1alpha1.Selectors{PFNames: []string{"ibp24s0", "ibp64s0"}}}
	got := selectIn(t, root, p)
	want := []string{"0000:18:00.0-s0", "0000:18:00.0-s1", "0000:18:00.0-s2", "0000:40:00.0-s0", "0000:40:00.0-s1", "0000:40:00.0-s2"}
	if strings.Join(ids(got), " ") != strings.Join(want, " ") {
		t.Fatalf("shares = %v, want %v", ids(got), want)
	}
	for i, d := range got {
		if d.Kind != v1alpha1.KindShared || d.Share != i%3 || d.VFIndex != -1 || !d.Healthy {
			t.Errorf("share %s = %+v", d.ID, d)
		}
		if len(d.ID) > 63 {
			t.Errorf("share ID %q longer than 63", d.ID)
		}
	}
	if a, b := got[0], got[3]; a.PF != "0000:18:00.0" || a.RDMA != "mlx5_0" || a.Uverbs != "uverbs0" || a.PFNetdev != "ibp24s0" ||
		b.PF != "0000:40:00.0" || b.RDMA != "mlx5_3" || a.Rail != 0 || b.Rail != 1 {
		t.Errorf("share details: %+v / %+v", a, b)
	}

	// The same tree read again gives the same IDs (stable across restarts).
	again := selectIn(t, root, p)
	if strings.Join(ids(again), " ") != strings.Join(want, " ") {
		t.Errorf("second selection = %v", ids(again))
	}

	// A DOWN port makes every share of that NIC unhealthy, and only those.
	if err := fakesysfs.SetPortState(root, "mlx5_3", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	for _, d := range selectIn(t, root, p) {
		wantHealthy := d.PF == "0000:18:00.0"
		if d.Healthy != wantHealthy {
			t.Errorf("%s healthy=%v (%s) after mlx5_3 (ibp64s0) went down", d.ID, d.Healthy, d.Reason)
		}
		if !wantHealthy && !strings.Contains(d.Reason, "port 1 is DOWN") {
			t.Errorf("%s reason %q", d.ID, d.Reason)
		}
	}
}

func TestSharedDefaultLimitAndBadLimit(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 0); err != nil {
		t.Fatal(err)
	}
	got := selectIn(t, root, v1alpha1.Pool{DeviceKind: "shared", Selectors: v1alpha1.Selectors{PFNames: []string{"ibp24s0"}}})
	if len(got) != v1alpha1.DefaultSharedLimit || got[len(got)-1].ID != "0000:18:00.0-s999" {
		t.Errorf("%d shares, last %q; want %d, 0000:18:00.0-s999", len(got), got[len(got)-1].ID, v1alpha1.DefaultSharedLimit)
	}
	if _, err := Compile(v1alpha1.Pool{Name: "x/y", DeviceKind: "shared", SharedLimit: ptr(0)}); err == nil {
		t.Error("Compile accepted sharedLimit 0")
	}
}

// TestRailIndexFollowsTopologyRails: on the generated roce-8gpu-4nic tree
// every NIC serves two GPUs; a PF pool's devices carry the index of the
// first GPU each serves, in PCI order of the GPUs.
func TestRailIndexFollowsTopologyRails(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("roce-8gpu-4nic", root, 1); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]int{}
	for i, r := range topo.Rails {
		if _, ok := first[r.NIC]; !ok {
			first[r.NIC] = i
		}
	}
	s, err := Compile(v1alpha1.Pool{DeviceKind: "vf"})
	if err != nil {
		t.Fatal(err)
	}
	devs := s.Select(topo)
	if len(devs) != 4 {
		t.Fatalf("%d VFs, want 4", len(devs))
	}
	for _, d := range devs {
		if want, ok := first[d.PF]; !ok || d.Rail != want {
			t.Errorf("VF %s of %s: rail %d, want %d (on a rail: %v)", d.ID, d.PF, d.Rail, want, ok)
		}
	}
}
