package topology

import (
	"fmt"
	"testing"
)

// TestBuildSortsByNumericAddress: GPUs, NICs and host bridges are in pciaddr's order, so
// functions in domains above ffff (Intel VMD) come last, where string order
// put them first.
func TestBuildSortsByNumericAddress(t *testing.T) {
	var in Inventory
	for _, a := range []string{"10000:01:00.0", "ffff:02:00.0", "0000:18:00.0"} {
		in.NICs = append(in.NICs, NIC{PCI: a, Vendor: 0x15b3, NUMA: -1})
		in.GPUs = append(in.GPUs, GPU{PCI: a[:len(a)-1] + "1", Vendor: 0x10de, NUMA: -1})
	}
	for _, hb := range []string{"pci10000:00", "odd", "pciffff:00", "pci0000:17", "pci0000:00"} {
		in.HostBridges = append(in.HostBridges, HostBridge{Name: hb, NUMA: -1})
	}
	topo := Build(in)
	var nics, gpus []string
	for _, n := range topo.NICs {
		nics = append(nics, n.PCI)
	}
	for _, g := range topo.GPUs {
		gpus = append(gpus, g.PCI)
	}
	if got, want := fmt.Sprint(nics), "[0000:18:00.0 ffff:02:00.0 10000:01:00.0]"; got != want {
		t.Errorf("NICs %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(gpus), "[0000:18:00.1 ffff:02:00.1 10000:01:00.1]"; got != want {
		t.Errorf("GPUs %s, want %s", got, want)
	}
	var hbs []string
	for _, hb := range topo.HostBridges {
		hbs = append(hbs, hb.Name)
	}
	if got, want := fmt.Sprint(hbs), "[pci0000:00 pci0000:17 pciffff:00 pci10000:00 odd]"; got != want {
		t.Errorf("host bridges %s, want %s", got, want)
	}
}
