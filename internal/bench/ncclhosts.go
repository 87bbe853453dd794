package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ncclHostRules are what the hosts of one job should agree on: a key per
// host ("" when its lines do not say), the status of a difference and
// what to check first. The network is the nccl-network check's.
var ncclHostRules = []struct {
	what   string
	key    func(NCCLHost) string
	status Status
	check  string
}{
	{"GPUDirect RDMA on inter-node channels", ncclGDRState, StatusWarn,
		"compare nvidia-peermem (lsmod), NCCL_NET_GDR_LEVEL and the GPUs' distance to their NICs (nvidia-smi topo -m) on the odd hosts"},
	{"HCAs", ncclHCAKinds, StatusWarn, "the pods got different NICs: compare their RDMA resources and NCCL_IB_HCA"},
	{"HCA names", ncclHCANames, StatusInfo, "SR-IOV VFs are named differently on each node: fine when their counts agree"},
	{"RoCE GID index", ncclGIDKey, StatusWarn, "both ends need the same GID type (RoCE v2 over IPv4): compare show_gids on the hosts, " +
		"pin NCCL_IB_GID_INDEX or let NCCL 2.19 and later pick one"},
	{"MTU", ncclMTUKey, StatusWarn, "set one MTU on every RoCE NIC and switch port: mismatched MTUs slow NCCL down or hang it"},
}

// ncclHostsVerdicts: one verdict per rule the hosts differ on, and a pass
// naming what they agree on when no difference is a warning. Nothing for
// a job of one host.
func ncclHostsVerdicts(base Verdict, t *NCCLTransport) []Verdict {
	if len(t.Hosts) < 2 {
		return nil
	}
	var agreed []string
	var verdicts []Verdict
	warned, agreeing := false, 0
	for _, r := range ncclHostRules {
		groups := map[string][]string{}
		for _, h := range t.Hosts {
			if k := r.key(h); k != "" {
				groups[k] = append(groups[k], h.Host)
			}
		}
		switch len(groups) {
		case 0:
			continue
		case 1:
			for k, hosts := range groups {
				if len(hosts) > 1 && r.status == StatusWarn {
					agreed = append(agreed, k)
					agreeing = max(agreeing, len(hosts))
				}
			}
			continue
		}
		v := base
		v.Check, v.Status = CheckNCCLHosts, r.status
		v.Reason = fmt.Sprintf("hosts differ in %s: %s; check first: %s", r.what, ncclGroups(groups), r.check)
		verdicts = append(verdicts, v)
		warned = warned || r.status == StatusWarn
	}
	if !warned && len(agreed) > 0 {
		v := base
		v.Check, v.Status = CheckNCCLHosts, StatusPass
		v.Reason = fmt.Sprintf("%d hosts agree: %s", agreeing, strings.Join(agreed, "; "))
		verdicts = append(verdicts, v)
	}
	return verdicts
}

// maxGroups bounds the groups of hosts a difference lists.
const maxGroups = 4

// ncclGroups lists the hosts by key, the smallest group (the odd hosts)
// first: "host-b: no GDRDMA; host-a, host-c: GDRDMA on every receive
// channel"; up to maxGroups groups.
func ncclGroups(groups map[string][]string) string {
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(groups[a]), len(groups[b])), cmp.Compare(groups[a][0], groups[b][0]))
	})
	parts := make([]string, 0, min(len(keys), maxGroups+1))
	for i, k := range keys {
		if i == maxGroups {
			parts = append(parts, fmt.Sprintf("and %d more groups of hosts", len(keys)-i))
			break
		}
		parts = append(parts, hostList(groups[k])+": "+k)
	}
	return strings.Join(parts, "; ")
}

// ncclHCAKinds counts a host's named HCAs by link layer: "HCAs: 2 x RoCE".
func ncclHCAKinds(h NCCLHost) string {
	n := map[string]int{}
	var layers []string
	for _, a := range h.HCAs {
		if a.LinkLayer == "" {
			continue
		}
		if n[a.LinkLayer] == 0 {
			layers = append(layers, a.LinkLayer)
		}
		n[a.LinkLayer]++
	}
	slices.Sort(layers)
	parts := make([]string, 0, len(layers))
	for _, l := range layers {
		parts = append(parts, fmt.Sprintf("%d x %s", n[l], l))
	}
	if len(parts) == 0 {
		return ""
	}
	return "HCAs: " + strings.Join(parts, ", ")
}

// ncclHCANames lists a host's HCA names in NCCL's order.
func ncclHCANames(h NCCLHost) string {
	var names []string
	for _, a := range h.HCAs {
		if a.Name != "" {
			names = append(names, a.Name)
		}
	}
	return strings.Join(names, " ")
}

// ncclGIDKey is the RoCE GID index a host used: NCCL_IB_GID_INDEX when
// NCCL says it was set, else the indexes of its queue pairs.
func ncclGIDKey(h NCCLHost) string {
	if v, ok := h.Env["NCCL_IB_GID_INDEX"]; ok {
		return "GID index " + v
	}
	var ids []int
	for _, a := range h.HCAs {
		if a.GIDIndex != nil && !slices.Contains(ids, *a.GIDIndex) {
			ids = append(ids, *a.GIDIndex)
		}
	}
	return ncclIntsKey("GID index", "GID indexes", ids)
}

// ncclMTUKey is the MTUs of a host's queue pairs.
func ncclMTUKey(h NCCLHost) string {
	var mtus []int
	for _, a := range h.HCAs {
		if a.MTU > 0 && !slices.Contains(mtus, a.MTU) {
			mtus = append(mtus, a.MTU)
		}
	}
	return ncclIntsKey("MTU", "MTUs", mtus)
}

// ncclIntsKey is "MTU 4096" or "MTUs 1024, 4096"; "" for none.
func ncclIntsKey(one, many string, v []int) string {
	if len(v) == 0 {
		return ""
	}
	slices.Sort(v)
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	if len(v) > 1 {
		one = many
	}
	return one + " " + strings.Join(s, ", ")
}
