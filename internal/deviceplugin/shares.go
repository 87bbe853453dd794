package deviceplugin

import (
	"cmp"
	"slices"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/topology"
)

// shareRequest is a GetPreferredAllocation of a shared pool: share IDs
// "<pf>-s<k>" (deviceid.Share).
type shareRequest struct {
	policy      alloc.Policy
	topo        *topology.Topology
	gpus        []string // the pod's GPUs (gpu-aware), may be empty
	available   []string
	mustInclude []string
	size        int
}

// preferShares chooses req.size shares in rounds: each round gives one
// share on each of the NICs this answer uses least, so a pod never gets two
// shares of one NIC unless it asks for more shares than there are NICs
// with a free share (kubelet's must-include shares are kept whatever NIC
// they are on). Within a round the pool's policy orders the NICs:
// gpu-aware (GPUs known) asks the policy for the NICs nearest the pod's
// GPUs; spread takes the NICs with the most free shares first (balancing
// pods over NICs); packed the fewest (filling NICs one after the other);
// ties go to the lower PCI address. On each NIC the lowest free share is
// taken. IDs that are not share IDs are taken last.
func preferShares(req shareRequest) (chosen, pfs []string) {
	free := map[string][]int{} // PF -> free share indexes, ascending
	var other []string
	must := map[string]bool{}
	for _, id := range req.mustInclude {
		must[id] = true
	}
	for _, id := range req.available {
		if must[id] {
			continue
		}
		pf, k, err := deviceid.ParseShare(id)
		if err != nil {
			other = append(other, id)
			continue
		}
		free[pf] = append(free[pf], k)
	}
	freeAtStart := map[string]int{}
	for pf, ks := range free {
		slices.Sort(ks)
		free[pf] = slices.Compact(ks)
		freeAtStart[pf] = len(free[pf])
	}
	used := map[string]int{}
	for _, id := range req.mustInclude {
		if slices.Contains(chosen, id) {
			continue
		}
		chosen = append(chosen, id)
		if pf, _, err := deviceid.ParseShare(id); err == nil {
			used[pf]++
		}
	}
	for len(chosen) < req.size {
		level := -1
		for pf, ks := range free {
			if len(ks) > 0 && (level < 0 || used[pf] < level) {
				level = used[pf]
			}
		}
		if level < 0 {
			break
		}
		var cands []string
		for pf, ks := range free {
			if len(ks) > 0 && used[pf] == level {
				cands = append(cands, pf)
			}
		}
		n := min(req.size-len(chosen), len(cands))
		for _, pf := range req.pickNICs(cands, n, freeAtStart) {
			chosen = append(chosen, deviceid.Share(pf, free[pf][0]))
			free[pf] = free[pf][1:]
			used[pf]++
		}
	}
	slices.Sort(other)
	for _, id := range other {
		if len(chosen) >= req.size {
			break
		}
		chosen = append(chosen, id)
	}
	for _, id := range chosen {
		if pf, _, err := deviceid.ParseShare(id); err == nil {
			pfs = append(pfs, pf)
		}
	}
	return chosen, pfs
}

// pickNICs returns n of the candidate NICs (n <= len(cands)) in the pool
// policy's order of preference.
func (req shareRequest) pickNICs(cands []string, n int, free map[string]int) []string {
	slices.Sort(cands)
	if req.policy != nil && req.policy.Needs().PodGPUs && len(req.gpus) > 0 && req.topo != nil {
		res, err := req.policy.Allocate(alloc.Request{Topology: req.topo, Available: cands, Size: n, GPUs: req.gpus})
		if err == nil && len(res.Devices) == n {
			return res.Devices
		}
	}
	packed := req.policy != nil && req.policy.Needs().PackShares
	slices.SortStableFunc(cands, func(a, b string) int {
		if packed {
			return cmp.Compare(free[a], free[b])
		}
		return cmp.Compare(free[b], free[a])
	})
	return cands[:n]
}
