package pool

import (
	"context"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/deviceid"
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

func TestShareIDRoundTrip(t *testing.T) {
	for _, c := range []struct {
		pci string
		k   int
	}{{"0000:18:00.0", 0}, {"0000:18:00.0", 999}, {"10000:e1:00.1", 12}} {
		id := ShareID(c.pci, c.k)
		pci, k, err := ParseShareID(id)
		if err != nil || pci != c.pci || k != c.k {
			t.Errorf("ParseShareID(%q) = %q %d %v", id, pci, k, err)
		}
	}
	for _, bad := range []string{"", "0000:18:00.0", "-s1", "0000:18:00.0-s", "0000:18:00.0-sx", "0000:18:00.0-s01", "0000:18:00.0-s-1", "0000:18:00.0-s99999"} {
		if _, _, err := ParseShareID(bad); err == nil {
			t.Errorf("ParseShareID(%q) accepted", bad)
		}
	}
}

func FuzzParseShareID(f *testing.F) {
	for _, s := range []string{"0000:18:00.0-s3", "-s", "a-s0-s1", "x-s0001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		pci, k, err := ParseShareID(id)
		if err != nil {
			if _, _, derr := deviceid.ParseShare(id); derr == nil {
				t.Fatalf("deviceid accepts %q, pool refuses it: %v", id, err)
			}
			return
		}
		if k < 0 || ShareID(pci, k) != id {
			t.Fatalf("ParseShareID(%q) = %q, %d: does not round-trip", id, pci, k)
		}
		if dpci, dk, derr := deviceid.ParseShare(id); derr != nil || dpci != pci || dk != k {
			t.Fatalf("deviceid.ParseShare(%q) = %q, %d, %v; pool says %q, %d", id, dpci, dk, derr, pci, k)
		}
	})
}

// TestShareIDMatchesDeviceID: railyard-cni reads share IDs with
// internal/deviceid; both must agree on every ID.
func TestShareIDMatchesDeviceID(t *testing.T) {
	for _, id := range []string{"0000:18:00.0-s0", "0000:18:00.0-s999", "10000:e1:00.1-s12", "0000:18:00.0-s01", "0000:18:00.0-s", "x-s1-s2", "-s1", ""} {
		pci, k, err := ParseShareID(id)
		dpci, dk, derr := deviceid.ParseShare(id)
		if (err == nil) != (derr == nil) || pci != dpci || k != dk {
			t.Errorf("%q: pool %q %d %v, deviceid %q %d %v", id, pci, k, err, dpci, dk, derr)
		}
		if err == nil && deviceid.Share(pci, k) != ShareID(pci, k) {
			t.Errorf("%q: formats differ: %q vs %q", id, deviceid.Share(pci, k), ShareID(pci, k))
		}
	}
}
