package alloc

import (
	"fmt"
	"math/rand/v2"

	"github.com/railyard-io/railyard/internal/topology"
)

// Hand-built topologies for the tests: the machines package (generated from
// published machine descriptions) is exercised by the simulator's tests.

// switchSpec is one PCIe switch (or, with direct set, a bare root port):
// the GPUs and NICs below it.
type switchSpec struct {
	gpus, nics int
	direct     bool
}

// hbSpec is one host bridge.
type hbSpec struct {
	numa     int
	switches []switchSpec
}

// nicOpts shapes every NIC: VFs per PF, and which PFs / VFs have a port
// that is down (by global NIC index).
type nicOpts struct {
	vfs      int
	downPF   map[int]bool
	downVF   map[[2]int]bool // {nic, vf}
	vfPorts  bool            // give VFs their own ports
	portless bool            // no ports at all
}

// buildTopology builds a Topology from specs with sequential bus numbers.
func buildTopology(hbs []hbSpec, o nicOpts) *topology.Topology {
	var in topology.Inventory
	bus := 1
	addr := func(fn int) string { return fmt.Sprintf("0000:%02x:00.%d", bus, fn) }
	nic := 0
	port := func(up bool) []topology.Port {
		if o.portless {
			return nil
		}
		st := "ACTIVE"
		if !up {
			st = "DOWN"
		}
		return []topology.Port{{Num: 1, State: st, PhysState: "LinkUp", LinkLayer: "Ethernet"}}
	}
	for h, hb := range hbs {
		name := fmt.Sprintf("pci0000:%02x", h)
		in.HostBridges = append(in.HostBridges, topology.HostBridge{Name: name, NUMA: hb.numa})
		dev := func(parent string, bridge bool) string {
			a := addr(0)
			bus++
			in.Devices = append(in.Devices, topology.PCIDevice{Address: a, NUMA: hb.numa, Bridge: bridge, Parent: parent, HostBridge: name})
			return a
		}
		for _, sw := range hb.switches {
			rp := dev("", true)
			parent := func() string { return rp }
			if !sw.direct {
				up := dev(rp, true)
				parent = func() string { return dev(up, true) }
			}
			for i := 0; i < sw.gpus; i++ {
				a := dev(parent(), false)
				in.GPUs = append(in.GPUs, topology.GPU{PCI: a, Vendor: 0x10de, NUMA: hb.numa})
			}
			for i := 0; i < sw.nics; i++ {
				p := parent()
				a := addr(0)
				in.Devices = append(in.Devices, topology.PCIDevice{Address: a, NUMA: hb.numa, Parent: p, HostBridge: name, Vendor: 0x15b3})
				n := topology.NIC{PCI: a, Vendor: 0x15b3, NUMA: hb.numa, Ports: port(!o.downPF[nic]), RDMA: fmt.Sprintf("mlx5_%d", nic)}
				for v := 0; v < o.vfs; v++ {
					vf := topology.VF{Index: v, PCI: fmt.Sprintf("0000:%02x:%02x.%d", 0x80+nic, v/8, v%8)}
					if o.vfPorts || o.downVF[[2]int{nic, v}] {
						vf.Ports = port(!o.downVF[[2]int{nic, v}])
					}
					n.VFs = append(n.VFs, vf)
				}
				in.NICs = append(in.NICs, n)
				bus++
				nic++
			}
		}
	}
	return topology.Build(in)
}

// dgx1Like is an 8-GPU, 4-NIC node: two host bridges per NUMA node, each
// with one switch holding two GPUs and one NIC.
func dgx1Like(o nicOpts) *topology.Topology {
	sw := []switchSpec{{gpus: 2, nics: 1}}
	return buildTopology([]hbSpec{{0, sw}, {0, sw}, {1, sw}, {1, sw}}, o)
}

// randomTopology builds a small random machine: 1-4 host bridges over two
// NUMA nodes, switches with 0-2 GPUs and 0-2 NICs, random VFs and port states.
func randomTopology(r *rand.Rand) *topology.Topology {
	var hbs []hbSpec
	for h := 0; h < 1+r.IntN(4); h++ {
		hb := hbSpec{numa: h % 2}
		for s := 0; s < 1+r.IntN(2); s++ {
			hb.switches = append(hb.switches, switchSpec{gpus: r.IntN(3), nics: r.IntN(3), direct: r.IntN(4) == 0})
		}
		hbs = append(hbs, hb)
	}
	o := nicOpts{vfs: r.IntN(5), downPF: map[int]bool{}, downVF: map[[2]int]bool{}, vfPorts: r.IntN(2) == 0}
	for n := 0; n < 16; n++ {
		if r.IntN(6) == 0 {
			o.downPF[n] = true
		}
		for v := 0; v < o.vfs; v++ {
			if r.IntN(8) == 0 {
				o.downVF[[2]int{n, v}] = true
			}
		}
	}
	return buildTopology(hbs, o)
}
