package topology

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// LineRate is a node's line rate as its RDMA ports report it.
type LineRate struct {
	Gbps float64
	// NICs is how many NICs run at that rate: the GPU rails' NICs when the
	// node has GPUs (what nccl-tests uses), otherwise every RDMA NIC.
	NICs int
	// Description says which NICs were looked at, for the report.
	Description string
}

// LineRate reads the line rate benchmarks are judged against. With device
// set ("mlx5_0", a netdev or a PCI address) it is that NIC's active port
// rate. Otherwise it looks at the
// NICs GPUs are railed to (all RDMA NICs on a node without GPUs) and takes
// the most common active port rate, preferring the higher rate on a tie, so
// that a slower storage or management NIC does not set the bar.
func (t *Topology) LineRate(device string) (LineRate, error) {
	if t == nil {
		return LineRate{}, errors.New("link rate: no topology")
	}
	if device != "" {
		for _, n := range t.NICs {
			if n.RDMA == device || n.Netdev == device || n.PCI == device {
				rate := activeRate(n)
				if rate <= 0 {
					return LineRate{}, fmt.Errorf("link rate: %s has no active port with a known rate", device)
				}
				return LineRate{Gbps: rate, NICs: 1, Description: fmt.Sprintf("%s (%s) port rate", n.RDMA, n.PCI)}, nil
			}
		}
		return LineRate{}, fmt.Errorf("link rate: no RDMA NIC %q in the topology", device)
	}
	candidates := map[string]bool{}
	what := "GPU rail NICs"
	for _, r := range t.Rails {
		candidates[r.NIC] = true
	}
	if len(candidates) == 0 {
		what = "RDMA NICs"
		for _, n := range t.NICs {
			candidates[n.PCI] = true
		}
	}
	count := map[float64]int{}
	var names = map[float64][]string{}
	for _, n := range t.NICs {
		if !candidates[n.PCI] {
			continue
		}
		if r := activeRate(n); r > 0 {
			count[r]++
			names[r] = append(names[r], n.RDMA)
		}
	}
	if len(count) == 0 {
		return LineRate{}, errors.New("link rate: no NIC with an active port and a known rate")
	}
	var best float64
	for r, c := range count {
		if c > count[best] || (c == count[best] && r > best) {
			best = r
		}
	}
	sort.Strings(names[best])
	return LineRate{Gbps: best, NICs: count[best],
		Description: fmt.Sprintf("%d %s at %g Gb/s: %s", count[best], what, best, strings.Join(names[best], ", "))}, nil
}

func activeRate(n NIC) float64 {
	for _, p := range n.Ports {
		if p.Active() && p.RateGbps > 0 {
			return p.RateGbps
		}
	}
	return 0
}
