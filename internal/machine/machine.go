package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// ErrNoTree is returned by Parse for a description without a PCIe tree
// (a partial description that only has published matrix rows).
var ErrNoTree = errors.New("machine description has no PCIe tree")

// Kind is the role of a node in the PCIe tree.
type Kind string

// Node kinds.
const (
	KindRoot       Kind = "root"        // a host bridge (root complex)
	KindRootPort   Kind = "root_port"   // a root port bridge
	KindSwitch     Kind = "switch"      // a switch upstream port
	KindSwitchPort Kind = "switch_port" // a switch downstream port
	KindGPU        Kind = "gpu"
	KindNIC        Kind = "nic"
	KindOther      Kind = "other" // NVMe, NVSwitch, anything else
)

// Description is a normalized machine description.
type Description struct {
	ID    string // "dgx_h100"
	Title string // "NVIDIA DGX H100 (...)"
	Kind  string // "bare-metal" | "cloud-vm"
	// Roots are the host bridges, each with its subtree.
	Roots []*Node
	// Matrix is the published (or inferred) nvidia-smi matrix: GPU name ->
	// NIC name (RDMA device name) -> class name. Empty when none is given.
	Matrix map[string]map[string]string
	// MatrixEvidence says where Matrix comes from.
	MatrixEvidence string
	// BestNIC maps a GPU name to the NIC names published as its closest.
	BestNIC map[string][]string
}

// Node is one node of the PCIe tree.
type Node struct {
	Kind Kind
	// Name of a host bridge ("pci0000:15") or PCI address of a function.
	Address  string
	NUMA     int // -1 when unknown
	Vendor   uint16
	Device   uint16
	Class    uint32
	Label    string // "GPU0", "mlx5_0": how published matrices name it
	Evidence string
	// NIC details.
	RDMA      string // RDMA device name, "" when not RDMA-capable
	Netdev    string // "" when the function has no netdev
	Ports     int
	Rate      string // "400 Gb/sec (4X NDR)"
	LinkLayer string // "InfiniBand" | "Ethernet" | "" (derived)
	Role      string // "compute", "storage/...", free text
	// RoCENetdev is the netdev a RoCE port's GIDs belong to when the
	// function has none of its own (VMware PVRDMA pairs with the vmxnet3
	// netdev on function 0 of its slot).
	RoCENetdev string
	// Driver overrides the driver the generator binds ("mlx4_core",
	// "radeon", "" for the kind's default).
	Driver   string
	Virtual  bool // a bridge that exists only in an NCCL topo file
	Children []*Node
}

var (
	hexRE = regexp.MustCompile(`^(0x)?[0-9a-fA-F]+$`)
)

// Parse reads a machine description. Unknown fields are ignored; missing
// values get defaults from the node's kind; malformed values are errors
// naming their path in the tree.
func Parse(data []byte) (*Description, error) {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("machine description: %w", err)
	}
	d := &Description{
		ID:    str(raw["id"]),
		Title: str(raw["name"]),
		Kind:  str(raw["kind"]),
	}
	nicPorts := nicPortTable(raw)
	var roots []any
	switch t := raw["tree"].(type) {
	case []any:
		roots = t
	case map[string]any:
		roots = []any{t}
	}
	for i, r := range roots {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tree[%d]: not an object", i)
		}
		n, err := parseNode(m, fmt.Sprintf("tree[%d]", i), nicPorts)
		if err != nil {
			return nil, err
		}
		d.Roots = append(d.Roots, n)
	}
	if len(d.Roots) == 0 {
		return nil, fmt.Errorf("%s: %w", d.ID, ErrNoTree)
	}
	if err := d.normalizeRoots(); err != nil {
		return nil, err
	}
	d.nameUnnamedNICs(defaultRate(raw))
	d.parseMatrix(raw)
	d.parseBest(raw)
	return d, nil
}

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// firstToken returns the first white-space separated token of a string value
// ("ibp97s0f1 (or enp97s0f1 if Ethernet)" -> "ibp97s0f1").
func firstToken(v any) string {
	f := strings.Fields(str(v))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func hexValue(v any, path string, bits int) (uint64, error) {
	s := str(v)
	if s == "" {
		return 0, nil
	}
	// Values may carry notes: "0x1013 (ConnectX-4, assumed)".
	m := firstToken(s)
	if !hexRE.MatchString(m) {
		return 0, fmt.Errorf("%s: %q is not a hex number", path, s)
	}
	x, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(m), "0x"), 16, bits)
	if err != nil {
		return 0, fmt.Errorf("%s: %q: %w", path, s, err)
	}
	return x, nil
}

func intValue(v any, def int) int {
	switch t := v.(type) {
	case float64:
		return int(t)
	case string:
		if i, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			return i
		}
	}
	return def
}

type portInfo struct {
	netdev, linkLayer, rate string
	speedGbps               int
}

// nicPortTable reads the top-level "nic_ports" (or "nic_ports_assumed")
// object keyed by RDMA device name.
func nicPortTable(raw map[string]any) map[string]portInfo {
	out := map[string]portInfo{}
	for _, key := range []string{"nic_ports", "nic_ports_assumed"} {
		m, _ := raw[key].(map[string]any)
		for name, v := range m {
			p, ok := v.(map[string]any)
			if !ok {
				continue
			}
			out[name] = portInfo{
				netdev:    firstToken(p["netdev"]),
				linkLayer: str(p["link_layer"]),
				rate:      str(p["rate"]),
				speedGbps: leadingGbps(str(p["speed"])),
			}
		}
	}
	return out
}

// leadingGbps reads "200 Gb/s HDR" -> 200 or "100000 Mb/s" -> 100.
func leadingGbps(s string) int {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0
	}
	v, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	if strings.HasPrefix(strings.ToLower(f[1]), "mb") {
		return v / 1000
	}
	return v
}

func parseNode(m map[string]any, path string, nicPorts map[string]portInfo) (*Node, error) {
	n := &Node{
		Kind:     Kind(str(m["kind"])),
		NUMA:     intValue(m["numa"], -1),
		Label:    str(m["name"]),
		Evidence: str(m["evidence"]),
		RDMA:     str(m["rdma_dev"]),
		Netdev:   firstToken(m["netdev"]),
		Ports:    intValue(m["ports"], 1),
		Rate:     str(m["rate"]),
		Role:     str(m["role"]),
		Driver:   str(m["driver"]),
	}
	if n.NUMA < 0 {
		n.NUMA = -1
	}
	switch n.Kind {
	case KindRoot:
		n.Address = str(m["domain_bus"])
		if h, err := pciaddr.ParseHostBridge(n.Address); err == nil {
			n.Address = h.String()
		} // else normalizeRoots names it after its first device
	case KindRootPort, KindSwitch, KindSwitchPort, KindGPU, KindNIC:
	default:
		n.Kind = KindOther
	}
	if n.Kind != KindRoot {
		a, err := pciaddr.Parse(str(m["bdf"]))
		if err != nil {
			return nil, fmt.Errorf("%s: %s has a bad bdf: %w", path, n.Kind, err)
		}
		n.Address = a.String()
		n.Virtual = a.Domain == 0xffff
	}
	var err error
	var v uint64
	if v, err = hexValue(m["vendor"], path+".vendor", 16); err != nil {
		return nil, err
	}
	n.Vendor = uint16(v)
	if v, err = hexValue(m["device"], path+".device", 16); err != nil {
		return nil, err
	}
	n.Device = uint16(v)
	if v, err = hexValue(m["class"], path+".class", 32); err != nil {
		return nil, err
	}
	n.Class = uint32(v)
	if n.Kind == KindNIC {
		p := nicPorts[n.RDMA]
		if _, given := m["netdev"]; !given {
			n.Netdev = p.netdev // an explicit null means "no netdev"
		}
		n.RoCENetdev = firstToken(m["roce_netdev"])
		n.LinkLayer = str(m["link_layer"])
		if n.LinkLayer == "" {
			n.LinkLayer = p.linkLayer
		}
		if n.Rate == "" {
			n.Rate = p.rate
		}
		if n.Rate == "" {
			gbps := p.speedGbps
			if mbps := intValue(m["speed_mbps"], 0); mbps > 0 {
				gbps = mbps / 1000
			}
			if gbps > 0 {
				n.Rate = rateString(gbps)
			}
		}
	}
	n.defaults()
	children, _ := m["children"].([]any)
	for i, c := range children {
		cm, ok := c.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.children[%d]: not an object", path, i)
		}
		child, err := parseNode(cm, fmt.Sprintf("%s.children[%d]", path, i), nicPorts)
		if err != nil {
			return nil, err
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}

// rateString formats a port rate the way the kernel prints it.
func rateString(gbps int) string {
	gen := map[int]string{10: "1X QDR", 25: "1X EDR", 40: "4X QDR", 50: "1X HDR", 56: "4X FDR", 100: "4X EDR", 200: "4X HDR", 400: "4X NDR", 800: "4X XDR"}[gbps]
	if gen == "" {
		return fmt.Sprintf("%d Gb/sec", gbps)
	}
	return fmt.Sprintf("%d Gb/sec (%s)", gbps, gen)
}

// predictableName returns the systemd predictable interface name of a
// ConnectX function ("ibp24s0" for InfiniBand, "enp5s0f0np0" for Ethernet),
// used when a description does not publish the netdev.
func predictableName(bdf string, infiniband bool) string {
	a, err := pciaddr.Parse(bdf)
	if err != nil {
		return ""
	}
	if infiniband {
		return fmt.Sprintf("ibp%ds%d", a.Bus, a.Device)
	}
	return fmt.Sprintf("enp%ds%df%dnp0", a.Bus, a.Device, a.Function)
}

// defaults fills the identity and NIC fields a description left out.
func (n *Node) defaults() {
	switch n.Kind {
	case KindRootPort, KindSwitch, KindSwitchPort:
		if n.Class == 0 {
			n.Class = 0x060400
		}
		if n.Vendor == 0 {
			n.Vendor = 0x8086
		}
	case KindGPU:
		if n.Class == 0 {
			n.Class = 0x030200
		}
		if n.Vendor == 0 {
			n.Vendor = 0x10de
		}
	case KindNIC:
		if n.Vendor == 0 && strings.HasPrefix(n.RDMA, "rdmap") {
			n.Vendor, n.Device = 0x1d0f, 0xefa1 // EFA names its RDMA devices rdmapBUSsSLOT
		}
		if n.Vendor == 0 {
			n.Vendor = 0x15b3 // every other unlabelled RDMA NIC in the descriptions is a ConnectX
		}
		if n.Device == 0 && n.Vendor == 0x15b3 {
			n.Device = 0x101b
		}
		if n.Class == 0 {
			n.Class = 0x020000
			if strings.HasPrefix(n.Netdev, "ib") || n.LinkLayer == "InfiniBand" {
				n.Class = 0x020700
			}
		}
		if n.LinkLayer == "" && n.RDMA != "" {
			switch {
			case n.Vendor == 0x1d0f:
				n.LinkLayer = "Unspecified" // EFA (SRD), neither IB nor RoCE
			case n.Class>>8 == 0x0207, n.Class>>8 == 0x0c06: // InfiniBand network or serial-bus controller
				n.LinkLayer = "InfiniBand"
			default:
				n.LinkLayer = "Ethernet"
			}
		}
		if n.Rate == "" && n.RDMA != "" {
			n.Rate = rateString(100)
		}
		if n.Netdev == "" && n.Vendor == 0x15b3 && n.RDMA != "" {
			n.Netdev = predictableName(n.Address, n.LinkLayer == "InfiniBand")
		}
	}
}

// Walk calls fn for every node below the roots, parents before children.
func (d *Description) Walk(fn func(n, parent *Node)) {
	var rec func(n, parent *Node)
	rec = func(n, parent *Node) {
		fn(n, parent)
		for _, c := range n.Children {
			rec(c, n)
		}
	}
	for _, r := range d.Roots {
		rec(r, nil)
	}
}
