package nccltopo

import (
	"fmt"
	"slices"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// Device is a GPU, NIC or other function placed in a System: its <cpu>
// and the <pci> elements above it. The zero value is no device.
type Device struct {
	cpu  int
	numa int
	// above lists the bridge elements from the CPU down to the device's
	// parent, by their position in the file (unique even when a file
	// repeats a virtual bus ID).
	above []int
	ok    bool
}

// Index locates the devices of a System by bus ID and by net name.
type Index struct {
	byAddr map[pciaddr.Addr]Device
	byNet  map[string]Device
	// GPUs and NICs list the functions the file marks as GPUs (a <gpu>
	// child or a display class) and NICs (a <nic> child or a network
	// class), in file order, so callers can report the ones they lack.
	GPUs, NICs []pciaddr.Addr
	// Duplicates lists bus IDs that occur more than once; the first wins.
	Duplicates []pciaddr.Addr
}

// NewIndex indexes a parsed System.
func NewIndex(s *System) *Index {
	ix := &Index{byAddr: map[pciaddr.Addr]Device{}, byNet: map[string]Device{}}
	next := 0
	for ci, cpu := range s.CPUs {
		var walk func(p *PCI, above []int)
		walk = func(p *PCI, above []int) {
			id := next
			next++
			d := Device{cpu: ci, numa: cpu.NUMAID, above: slices.Clone(above), ok: true}
			if _, dup := ix.byAddr[p.Addr]; dup {
				ix.Duplicates = append(ix.Duplicates, p.Addr)
			} else {
				ix.byAddr[p.Addr] = d
				switch {
				case p.GPU != nil || (p.Class>>16 == 0x03 && len(p.Children) == 0):
					ix.GPUs = append(ix.GPUs, p.Addr)
				case p.NIC != nil || (p.Class>>16 == 0x02 && len(p.Children) == 0):
					ix.NICs = append(ix.NICs, p.Addr)
				}
			}
			if p.NIC != nil {
				for _, n := range p.NIC.Nets {
					if _, dup := ix.byNet[n.Name]; n.Name != "" && !dup {
						ix.byNet[n.Name] = d
					}
				}
			}
			for _, c := range p.Children {
				walk(c, append(above, id))
			}
		}
		for _, p := range cpu.PCIs {
			walk(p, nil)
		}
		for _, nic := range cpu.NICs {
			for _, n := range nic.Nets {
				if _, dup := ix.byNet[n.Name]; n.Name != "" && !dup {
					ix.byNet[n.Name] = Device{cpu: ci, numa: cpu.NUMAID, ok: true}
				}
			}
		}
	}
	return ix
}

// ByBusID finds the function with this PCI bus ID (any case, any domain
// width); false when the file does not list it or the ID is malformed.
func (ix *Index) ByBusID(busID string) (Device, bool) {
	a, err := parseBusID(busID)
	if err != nil {
		return Device{}, false
	}
	d, ok := ix.byAddr[a]
	return d, ok
}

// ByNetName finds the NIC whose <net> has this name (an RDMA device name
// such as "mlx5_0").
func (ix *Index) ByNetName(name string) (Device, bool) {
	d, ok := ix.byNet[name]
	return d, ok
}

// Class returns the distance class between two devices of the file, as
// NCCL computes path types (and nvidia-smi names them):
//
//   - under one <cpu>: PIX when both sit below one bridge element that is
//     the only bridge on the path, PXB when the path crosses several bridge
//     elements below a common one, PHB when they share no bridge (the path
//     goes through the CPU's root complex; NCCL has no NODE);
//   - under different <cpu> elements: NODE when both have the same numaid,
//     SYS otherwise.
//
// ClassUnknown when either device is the zero Device.
func Class(a, b Device) topology.Class {
	if !a.ok || !b.ok {
		return topology.ClassUnknown
	}
	if a.cpu != b.cpu {
		if a.numa >= 0 && a.numa == b.numa {
			return topology.NODE
		}
		return topology.SYS
	}
	k := 0
	for k < len(a.above) && k < len(b.above) && a.above[k] == b.above[k] {
		k++
	}
	if k == 0 {
		return topology.PHB
	}
	// Bridges on the path: the lowest common one plus those below it on
	// either side.
	if bridges := 1 + (len(a.above) - k) + (len(b.above) - k); bridges == 1 {
		return topology.PIX
	}
	return topology.PXB
}

// String describes a device's place for messages.
func (d Device) String() string {
	if !d.ok {
		return "not in the topology"
	}
	return fmt.Sprintf("cpu[%d] numaid %d, %d bridges deep", d.cpu, d.numa, len(d.above))
}
