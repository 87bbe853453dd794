package topology

import (
	"fmt"
	"strings"
)

// Class is the distance class of a GPU x NIC pair, with nvidia-smi's meaning.
// Lower is closer; the numeric value is the rank policies minimise.
type Class int

// The distance classes, closest first.
const (
	// ClassUnknown is the zero value: no path is known.
	ClassUnknown Class = iota
	// PIX: the path crosses at most one PCIe switch (or one bridge).
	PIX
	// PXB: the path crosses several PCIe bridges but not a host bridge.
	PXB
	// PHB: the path crosses a PCIe host bridge (the CPU's root complex).
	PHB
	// NODE: the path crosses the interconnect between host bridges of one NUMA node.
	NODE
	// SYS: the path crosses the SMP interconnect between NUMA nodes.
	SYS
)

// Classes lists every known class, closest first.
var Classes = [...]Class{PIX, PXB, PHB, NODE, SYS}

// String returns the nvidia-smi name of the class ("PIX", ..., "SYS").
func (c Class) String() string {
	switch c {
	case PIX:
		return "PIX"
	case PXB:
		return "PXB"
	case PHB:
		return "PHB"
	case NODE:
		return "NODE"
	case SYS:
		return "SYS"
	default:
		return "UNKNOWN"
	}
}

// Rank is the class's cost for policies: 1 (PIX) to 5 (SYS), 6 when unknown
// so that an unknown path is never preferred over a known one.
func (c Class) Rank() int {
	if c < PIX || c > SYS {
		return int(SYS) + 1
	}
	return int(c)
}

// GPUDirect reports whether NCCL enables GPUDirect RDMA for this class by
// default (NCCL_NET_GDR_LEVEL=PXB): PIX and PXB only.
func (c Class) GPUDirect() bool { return c == PIX || c == PXB }

// ParseClass reads a class name as nvidia-smi prints it (case-insensitive).
func ParseClass(s string) (Class, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "PIX":
		return PIX, nil
	case "PXB":
		return PXB, nil
	case "PHB":
		return PHB, nil
	case "NODE":
		return NODE, nil
	case "SYS":
		return SYS, nil
	}
	return ClassUnknown, fmt.Errorf("unknown distance class %q (want PIX, PXB, PHB, NODE or SYS)", s)
}

// MarshalText encodes the class as its name, so JSON shows "PIX".
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes a class name.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
