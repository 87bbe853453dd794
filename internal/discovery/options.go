package discovery

import (
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/internal/nccltopo"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// Options change what discovery derives beyond the sysfs tree. The zero
// value is plain sysfs discovery.
type Options struct {
	// NCCLTopology, when set, classifies GPU x NIC pairs from an NCCL
	// topology file (the one NCCL_TOPO_FILE names) instead of the PCI tree:
	// on cloud VMs that hide their PCIe switches (Azure ND-series) sysfs
	// says NODE for every pair of a NUMA node and the file has the real
	// grouping. A GPU or NIC the file does not list keeps its sysfs
	// classes, with a warning.
	NCCLTopology *nccltopo.System
	// NCCLTopologyName names the file in warnings ("ndv4-topo.xml").
	NCCLTopologyName string
	// Recorder, when set, is told every sysfs path discovery reads
	// (sysfs.FS.Recorder): what `railyard topo --capture` stores.
	Recorder sysfs.Recorder
}

// applyNCCLTopology adds the classes an NCCL topology file gives to the
// inventory's GPU x NIC pairs. Devices are matched by PCI bus ID; a NIC the
// file lists only by net name (a <nic> without a PCI function, or the second
// port of a card NCCL merged into one) is matched by its RDMA device name.
func applyNCCLTopology(inv *topology.Inventory, sys *nccltopo.System, name string) {
	if name == "" {
		name = "the NCCL topology file"
	}
	ix := nccltopo.NewIndex(sys)
	warn := func(path, msg string) {
		inv.Warnings = append(inv.Warnings, topology.Warning{Path: path, Message: msg})
	}
	for _, a := range ix.Duplicates {
		warn(a.String(), fmt.Sprintf("listed more than once in %s; the first entry counts", name))
	}
	gpus := make([]nccltopo.Device, len(inv.GPUs))
	for i, g := range inv.GPUs {
		d, ok := ix.ByBusID(g.PCI)
		if !ok {
			warn(g.PCI, fmt.Sprintf("GPU not in %s: its classes come from sysfs", name))
		}
		gpus[i] = d
	}
	nics := make([]nccltopo.Device, len(inv.NICs))
	for j, n := range inv.NICs {
		d, ok := ix.ByBusID(n.PCI)
		if !ok && n.RDMA != "" {
			d, ok = ix.ByNetName(n.RDMA)
		}
		if !ok {
			warn(n.PCI, fmt.Sprintf("NIC %s not in %s: its classes come from sysfs", n.RDMA, name))
		}
		nics[j] = d
	}
	for i, g := range inv.GPUs {
		for j, n := range inv.NICs {
			if c := nccltopo.Class(gpus[i], nics[j]); c != topology.ClassUnknown {
				inv.PairClasses = append(inv.PairClasses, topology.PairClass{GPU: g.PCI, NIC: n.PCI, Class: c, Source: "nccl-topo"})
			}
		}
	}
	// Devices of the file that this node lacks: a file for another VM
	// size, or devices hidden from this node.
	have := make(map[pciaddr.Addr]bool, len(inv.Devices))
	for _, d := range inv.Devices {
		if a, err := pciaddr.Parse(d.Address); err == nil {
			have[a] = true
		}
	}
	var missing []string
	for _, a := range append(append([]pciaddr.Addr{}, ix.GPUs...), ix.NICs...) {
		if !have[a] {
			missing = append(missing, a.String())
		}
	}
	if len(missing) > 0 {
		warn("", fmt.Sprintf("%s lists %d GPUs or NICs that sysfs does not have (a file for another machine?): %s",
			name, len(missing), strings.Join(missing, ", ")))
	}
}

// pairedNetdev finds the netdev of an RDMA function that has none of its
// own, from the netdev the kernel tied to its port's GIDs
// (ports/N/gid_attrs/ndevs/I): VMware's PVRDMA function pairs with the
// vmxnet3 netdev on function 0 of its slot, which is where RoCE traffic
// and addresses live. Warns when there is none.
func (r *reader) pairedNetdev(f *fn, n *topology.NIC) {
	if n.LinkLayer != "Ethernet" {
		return // an InfiniBand function's IPoIB netdev is its own; none is fine
	}
	if name, err := r.fs.GIDNetdev(n.PCI, n.RDMA); err == nil {
		n.Netdev = name
		if addr, err := r.fs.NetdevPCIAddress(name); err == nil && addr != n.PCI {
			n.NetdevPCI = addr
		}
		return
	}
	r.warn(n.PCI, fmt.Sprintf("%s has no netdev: none of its own and none tied to its GIDs (gid_attrs/ndevs)", n.RDMA))
}
