package machine

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// normalizeRoots gives every host bridge a "pciDDDD:BB" name. A root without
// one takes the domain and bus of its first real descendant; a root whose
// children sit behind virtual bridges (NCCL topo-file groupings that sysfs
// does not have, as on Azure NDv4) is split: each function becomes the only
// device of its own host bridge, as the VM really presents it.
func (d *Description) normalizeRoots() error {
	var roots []*Node
	for i, r := range d.Roots {
		if r.Kind != KindRoot {
			return fmt.Errorf("tree[%d]: top-level node is %q, want root", i, r.Kind)
		}
		if hasVirtual(r) {
			for _, leaf := range flattenVirtual(r) {
				roots = append(roots, &Node{Kind: KindRoot, Address: hostBridgeOf(leaf.Address), NUMA: pickNUMA(leaf.NUMA, r.NUMA), Evidence: r.Evidence, Children: []*Node{leaf}})
			}
			continue
		}
		if !pciaddr.IsCanonicalHostBridge(r.Address) {
			first := firstAddress(r)
			if first == "" {
				continue // an empty root (nothing below it)
			}
			r.Address = hostBridgeOf(first)
		}
		roots = append(roots, r)
	}
	// Two roots that resolve to one host bridge are one root.
	merged := map[string]*Node{}
	var out []*Node
	for _, r := range roots {
		if m, ok := merged[r.Address]; ok {
			m.Children = append(m.Children, r.Children...)
			continue
		}
		merged[r.Address] = r
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b *Node) int { // every root is named by now
		x, _ := pciaddr.ParseHostBridge(a.Address)
		y, _ := pciaddr.ParseHostBridge(b.Address)
		return x.Compare(y)
	})
	d.Roots = out
	return nil
}

func pickNUMA(a, b int) int {
	if a >= 0 {
		return a
	}
	return b
}

func hostBridgeOf(bdf string) string {
	a, err := pciaddr.Parse(bdf)
	if err != nil {
		return ""
	}
	return pciaddr.HostBridge{Domain: a.Domain, Bus: a.Bus}.String()
}

func hasVirtual(n *Node) bool {
	if n.Virtual {
		return true
	}
	for _, c := range n.Children {
		if hasVirtual(c) {
			return true
		}
	}
	return false
}

// flattenVirtual returns the real functions below virtual bridges.
func flattenVirtual(n *Node) []*Node {
	var out []*Node
	for _, c := range n.Children {
		if c.Virtual {
			out = append(out, flattenVirtual(c)...)
			continue
		}
		out = append(out, c)
	}
	return out
}

func firstAddress(n *Node) string {
	for _, c := range n.Children {
		if pciaddr.IsCanonical(c.Address) && !c.Virtual {
			return c.Address
		}
		if a := firstAddress(c); a != "" {
			return a
		}
	}
	return ""
}

// nameUnnamedNICs gives RDMA names to NICs a description lists without one
// (Azure NDv4 does not publish them): mlx5_N in PCI address order, N after
// the highest published index.
func (d *Description) nameUnnamedNICs(rate string) {
	var unnamed []*Node
	next := 0
	d.Walk(func(n, _ *Node) {
		if n.Kind != KindNIC {
			return
		}
		if n.RDMA == "" && n.Class>>8 == 0x0207 {
			unnamed = append(unnamed, n)
		}
		if i, ok := strings.CutPrefix(n.RDMA, "mlx5_"); ok {
			if v, err := strconv.Atoi(i); err == nil && v >= next {
				next = v + 1
			}
		}
	})
	slices.SortFunc(unnamed, func(a, b *Node) int { return pciaddr.CompareStrings(a.Address, b.Address) })
	for _, n := range unnamed {
		n.RDMA = fmt.Sprintf("mlx5_%d", next)
		if n.Netdev == "" {
			n.Netdev = fmt.Sprintf("ib%d", next)
		}
		if n.Label == "" {
			n.Label = n.RDMA
		}
		if n.Rate == "" {
			n.Rate = rate
		}
		n.defaults()
		next++
	}
}

var gbpsRE = regexp.MustCompile(`(\d+) ?Gb/s`)

// defaultRate reads the port speed a description states only in prose
// (nic_ports.note: "8x HDR 200 Gb/s InfiniBand"), "" when there is none.
func defaultRate(raw map[string]any) string {
	np, _ := raw["nic_ports"].(map[string]any)
	m := gbpsRE.FindStringSubmatch(str(np["note"]))
	if m == nil {
		return ""
	}
	v, _ := strconv.Atoi(m[1])
	return rateString(v)
}

func (d *Description) parseMatrix(raw map[string]any) {
	tm, _ := raw["topo_matrix"].(map[string]any)
	d.MatrixEvidence = str(tm["evidence"])
	cols, _ := tm["columns"].([]any)
	rows, _ := tm["rows"].(map[string]any)
	if len(cols) == 0 || len(rows) == 0 {
		return
	}
	// nvidia-smi names NICs NIC0..NICn; a description maps them to RDMA
	// names in nic_legend, or (DGX H100) states they are in mlx5 order.
	legend := map[string]string{}
	for i := range 64 {
		legend[fmt.Sprintf("NIC%d", i)] = fmt.Sprintf("mlx5_%d", i)
	}
	if nl, ok := raw["nic_legend"].(map[string]any); ok {
		for k, v := range nl {
			legend[k] = str(v)
		}
	}
	d.Matrix = map[string]map[string]string{}
	for gpu, rv := range rows {
		if !strings.HasPrefix(gpu, "GPU") {
			continue
		}
		vals, _ := rv.([]any)
		for i, c := range cols {
			col := str(c)
			if i >= len(vals) || strings.HasPrefix(col, "GPU") || strings.Contains(col, "Affinity") {
				continue
			}
			if l, ok := legend[col]; ok {
				col = l
			}
			class := str(vals[i])
			switch class {
			case "PIX", "PXB", "PHB", "NODE", "SYS":
			default:
				continue
			}
			if d.Matrix[gpu] == nil {
				d.Matrix[gpu] = map[string]string{}
			}
			d.Matrix[gpu][col] = class
		}
	}
}

func (d *Description) parseBest(raw map[string]any) {
	best, _ := raw["gpu_nic_best"].(map[string]any)
	if len(best) == 0 {
		return
	}
	d.BestNIC = map[string][]string{}
	for gpu, v := range best {
		switch t := v.(type) {
		case string:
			d.BestNIC[gpu] = []string{t}
		case []any:
			for _, x := range t {
				d.BestNIC[gpu] = append(d.BestNIC[gpu], str(x))
			}
		}
	}
}
