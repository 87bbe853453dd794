package discovery

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMADDevicesAreModelled: a function's umad/issm char devices
// (infiniband_mad/) are part of the model, for the PF and for a VF; a
// function without them has none.
func TestMADDevicesAreModelled(t *testing.T) {
	root := generate(t, smallMachine, 1)
	topo := mustDiscover(t, root)
	var ib string
	for _, n := range topo.NICs {
		if n.RDMA == "mlx5_1" {
			ib = n.PCI
		}
	}
	if ib == "" || len(topo.NICs[0].VFs) == 0 {
		t.Fatalf("model lacks the IB NIC or VFs: %+v", topo.NICs)
	}
	vf := topo.NICs[0].VFs[0].PCI
	for addr, names := range map[string][]string{ib: {"umad1", "issm1"}, vf: {"umad2"}} {
		for _, n := range names {
			if err := os.MkdirAll(filepath.Join(root, "bus/pci/devices", addr, "infiniband_mad", n), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	topo = mustDiscover(t, root)
	for _, n := range topo.NICs {
		want := [2]string{}
		if n.PCI == ib {
			want = [2]string{"umad1", "issm1"}
		}
		if got := [2]string{n.UMAD, n.ISSM}; got != want {
			t.Errorf("NIC %s: MAD devices %v, want %v", n.PCI, got, want)
		}
		for _, v := range n.VFs {
			want := [2]string{}
			if v.PCI == vf {
				want = [2]string{"umad2", ""}
			}
			if got := [2]string{v.UMAD, v.ISSM}; got != want {
				t.Errorf("VF %s: MAD devices %v, want %v", v.PCI, got, want)
			}
		}
	}
}
