package rails

import (
	"fmt"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/jobrails"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// maxReasons bounds the lines saying why nodes have no room.
const maxReasons = 12

// explain writes the choice to stderr: the set (also in NIC order when
// toNIC is known), the nodes with room, and why each other node has none.
// Names and taints come from the cluster: they are escaped.
func explain(s iostreams.Streams, nodes []jobrails.Node, c jobrails.Choice, toNIC map[int64]int64) {
	if c.Set == nil {
		return
	}
	nic := ""
	if toNIC != nil {
		if n, err := c.Set.InNICOrder(toNIC); err == nil {
			nic = " (NIC order " + n + ")"
		}
	}
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = termsafe.Escape(n)
	}
	fmt.Fprintf(s.ErrOut, "rails %s%s: room for a pod on %d of %d nodes (%s)\n", c.Set, nic, len(c.Nodes), len(nodes), strings.Join(names, ", "))
	lines, more := 0, 0
	for _, n := range nodes {
		if slices.Contains(c.Nodes, n.Name) {
			continue
		}
		for _, why := range reasons(n, c.Set) {
			if lines == maxReasons {
				more++
				continue
			}
			fmt.Fprintf(s.ErrOut, "  %s: %s\n", termsafe.Escape(n.Name), termsafe.Escape(why))
			lines++
		}
	}
	if more > 0 {
		fmt.Fprintf(s.ErrOut, "  ... and %d more\n", more)
	}
}

// reasons say why node n has no room for a pod on set.
func reasons(n jobrails.Node, set jobrails.Set) []string {
	out := slices.Clone(n.Notes)
	tainted := false
	for _, r := range set {
		nr := n.Rails[r.Rail]
		if nr == nil {
			out = append(out, fmt.Sprintf("no rail %d", r.Rail))
			continue
		}
		if len(nr.Tainted) > 0 {
			tainted = true
			out = append(out, fmt.Sprintf("rail %d: devices with taints the job does not tolerate: %s", r.Rail, strings.Join(nr.Tainted, ", ")))
		}
		if nr.FreeGPUs < r.GPUs {
			out = append(out, fmt.Sprintf("rail %d: %d of its %d GPUs free, a pod takes %d", r.Rail, nr.FreeGPUs, nr.GPUs, r.GPUs))
		}
		if nr.FreeNICs < r.GPUs {
			out = append(out, fmt.Sprintf("rail %d: NIC devices take %d more requests, a pod makes %d", r.Rail, nr.FreeNICs, r.GPUs))
		}
	}
	if tainted {
		out = append(out, "a job that may use such devices tolerates them: --toleration KEY[=VALUE][:EFFECT]")
	}
	if len(out) == 0 {
		out = append(out, "the set's GPUs and free NIC devices do not pair up on PCIe roots here")
	}
	return out
}
