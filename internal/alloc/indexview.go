package alloc

import "github.com/railyard-io/railyard/internal/topology"

// Positional access to an Index, for callers that keep per-device state in
// slices (the cluster simulator): devices are numbered 0..Len()-1 in
// address order, PFs and GPUs by their position in Topology().NICs and
// Topology().GPUs.

// Len returns how many devices (each PF and each VF) the index holds.
func (ix *Index) Len() int { return len(ix.devs) }

// DeviceAt returns device i's address and the position of its PF in
// Topology().NICs. It panics when i is out of range, as slices do.
func (ix *Index) DeviceAt(i int) (addr string, pf int) {
	return ix.devs[i].addr, int(ix.devs[i].pf)
}

// Lookup returns the position of the device at addr.
func (ix *Index) Lookup(addr string) (int, bool) {
	i, ok := ix.lookup(addr)
	return int(i), ok
}

// ClassAt returns the distance class of GPU g to PF p (positions in
// Topology().GPUs and Topology().NICs).
func (ix *Index) ClassAt(g, p int) topology.Class {
	return ix.class[g*len(ix.pfs)+p]
}
