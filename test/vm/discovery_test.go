package vm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

var ctx = context.Background()

// The VM's PCI tree (hack/vm/run.sh): PF 0000:01:00.0 under root port
// 0000:00:02.0 of pci0000:00; PF 0000:23:00.0 under downstream port
// 0000:22:00.0 of the switch whose upstream port 0000:21:00.0 sits under
// root port 0000:20:00.0 of the expander bridge pci0000:20 on NUMA node 1.
const (
	pfRoot   = "0000:01:00.0"
	pfSwitch = "0000:23:00.0"
)

func TestDiscoverySRIOVTreeRealKernel(t *testing.T) {
	vmkernel.Require(t)
	pfs := vmkernel.PFs(t)
	if len(pfs) != 2 || pfs[0].PCI != pfRoot || pfs[1].PCI != pfSwitch {
		t.Fatalf("PFs %+v, want %s and %s", pfs, pfRoot, pfSwitch)
	}
	vf1 := vmkernel.EnsureVFs(t, pfRoot, 2)
	vf2 := vmkernel.EnsureVFs(t, pfSwitch, 3)
	t.Cleanup(func() { vmkernel.SetNumVFs(t, pfSwitch, 0) })

	inv, err := discovery.ReadInventory(ctx, "/sys")
	if err != nil {
		t.Fatal(err)
	}
	devs := map[string]topology.PCIDevice{}
	for _, d := range inv.Devices {
		devs[d.Address] = d
	}
	want := []topology.PCIDevice{
		{Address: pfRoot, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: "igb", NUMA: -1, Parent: "0000:00:02.0", HostBridge: "pci0000:00"},
		{Address: pfSwitch, Vendor: 0x8086, Device: 0x10c9, Class: 0x020000, Driver: "igb", NUMA: 1, Parent: "0000:22:00.0", HostBridge: "pci0000:20"},
		{Address: "0000:22:00.0", Bridge: true, Parent: "0000:21:00.0", HostBridge: "pci0000:20", NUMA: 1},
		{Address: "0000:21:00.0", Bridge: true, Parent: "0000:20:00.0", HostBridge: "pci0000:20", NUMA: 1},
		{Address: "0000:20:00.0", Bridge: true, Parent: "", HostBridge: "pci0000:20", NUMA: 1},
		{Address: "0000:00:02.0", Bridge: true, Parent: "", HostBridge: "pci0000:00", NUMA: -1},
	}
	for _, w := range want {
		d, ok := devs[w.Address]
		if !ok {
			t.Errorf("%s not discovered", w.Address)
			continue
		}
		if w.Bridge {
			if !d.Bridge || d.Parent != w.Parent || d.HostBridge != w.HostBridge || d.NUMA != w.NUMA {
				t.Errorf("bridge %s: %+v, want parent %s, host bridge %s, NUMA %d", w.Address, d, w.Parent, w.HostBridge, w.NUMA)
			}
			continue
		}
		if d != w {
			t.Errorf("PF %s: %+v, want %+v", w.Address, d, w)
		}
	}
	numa := map[string]int{}
	for _, hb := range inv.HostBridges {
		numa[hb.Name] = hb.NUMA
	}
	if numa["pci0000:20"] != 1 {
		t.Errorf("host bridges %+v: want pci0000:20 on NUMA node 1", inv.HostBridges)
	}

	// The SR-IOV view every adapter uses (sysfs.SRIOV): counts, VF
	// addresses in virtfn order, physfn back links, igbvf bound.
	fs := sysfs.New("/sys")
	for pf, vfs := range map[string][]string{pfRoot: vf1, pfSwitch: vf2} {
		st, err := fs.SRIOV(pf)
		if err != nil {
			t.Fatal(err)
		}
		if st.TotalVFs != 7 || st.NumVFs != len(vfs) || len(st.VFs) != len(vfs) {
			t.Errorf("%s: %+v, want 7 total and %d VFs", pf, st, len(vfs))
		}
		for i, v := range st.VFs {
			if v.Index != i || v.PCI != vfs[i] {
				t.Errorf("%s VF %d: %+v, want %s", pf, i, v, vfs[i])
			}
			if got, err := fs.PhysFn(v.PCI); err != nil || got != pf {
				t.Errorf("physfn of %s: %q, %v", v.PCI, got, err)
			}
			if drv, err := fs.Driver(v.PCI); err != nil || drv != "igbvf" {
				t.Errorf("driver of %s: %q, %v", v.PCI, drv, err)
			}
			if n, err := fs.Netdevs(v.PCI); err != nil || len(n) != 1 {
				t.Errorf("netdevs of %s: %v, %v", v.PCI, n, err)
			}
		}
	}
	if vf2[0] != "0000:23:10.0" || vf1[0] != "0000:01:10.0" {
		t.Errorf("first VFs %s and %s, want 0000:01:10.0 and 0000:23:10.0 (igb's VF offset 0x80)", vf1[0], vf2[0])
	}

	// No RDMA device on a PCI function here (rxe is virtual): the model has
	// no RDMA NICs, and says so without failing.
	topo, err := discovery.Discover(ctx, "/sys")
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.NICs) != 0 {
		b, _ := json.Marshal(topo.NICs)
		t.Errorf("RDMA NICs %s, want none (igb has no RDMA)", b)
	}
	for _, w := range topo.Warnings {
		t.Logf("warning: %s", w)
	}
}
