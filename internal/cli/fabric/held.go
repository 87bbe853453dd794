package fabric

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// maxHeldListed bounds the ports each line of writeHeld names.
const maxHeldListed = 20

// writeHeld names, after the table, the rail ports whose publisher holds
// a neighbor it has not heard lately (fabric.Port.StaleRounds: judged as
// cabled, as the labels still say) and those degraded past the hold
// (fabric.Port.LastSwitch: judged as dark, while the node keeps its leaf
// set and unit). Nothing when there are none.
func writeHeld(w io.Writer, nodes []fabric.Node) error {
	var held, degraded []string
	for _, n := range nodes {
		for _, p := range n.Ports {
			switch {
			case p.Rail < 0:
			case p.Switch != "" && p.StaleRounds > 0:
				held = append(held, fmt.Sprintf("%s rail %d (%s, %d %s)", termsafe.Escape(n.Name), p.Rail, termsafe.Escape(p.Switch),
					p.StaleRounds, map[bool]string{true: "round", false: "rounds"}[p.StaleRounds == 1]))
			case p.Switch == "" && p.LastSwitch != "":
				degraded = append(degraded, fmt.Sprintf("%s rail %d (last on %s)", termsafe.Escape(n.Name), p.Rail, termsafe.Escape(p.LastSwitch)))
			}
		}
	}
	for _, l := range []struct {
		what  string
		ports []string
	}{
		{"Held (not heard lately, still counted as cabled)", held},
		{"Degraded (no neighbor past the hold; the node keeps its leaf set and unit)", degraded},
	} {
		if len(l.ports) == 0 {
			continue
		}
		sort.Strings(l.ports)
		more := ""
		if len(l.ports) > maxHeldListed {
			more = fmt.Sprintf(", and %d more", len(l.ports)-maxHeldListed)
			l.ports = l.ports[:maxHeldListed]
		}
		if _, err := fmt.Fprintf(w, "%s: %s%s\n", l.what, strings.Join(l.ports, ", "), more); err != nil {
			return err
		}
	}
	return nil
}
