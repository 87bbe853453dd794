package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Checks of a job's NCCL INFO lines (Result.NCCLTransport).
const (
	// CheckNCCLNetwork: the network NCCL chose; TCP sockets where RDMA
	// is expected fail.
	CheckNCCLNetwork = "nccl-network"
	// CheckNCCLGDR: GPUDirect RDMA per HCA and on the inter-node channels.
	CheckNCCLGDR = "nccl-gdr"
	// CheckNCCLHosts: the hosts of one job agree (GDRDMA, HCAs, RoCE GID
	// index, MTU).
	CheckNCCLHosts = "nccl-hosts"
)

// ncclNetworks classify the networks NCCL names ("Using network %s", the
// %s of "via NET/%s/%d"); an unknown one (GCP's TCP plugins, say) is not
// judged.
var ncclNetworks = []struct {
	match func(string) bool
	rdma  bool
}{
	{func(n string) bool { return n == "IB" }, true},                                // NCCL's verbs transport: InfiniBand and RoCE
	{func(n string) bool { return strings.HasPrefix(n, "IBext") }, true},            // nccl-rdma-sharp-plugins ("IBext", "IBext_v8")
	{func(n string) bool { return strings.HasPrefix(n, "CollNet/") }, true},         // SHARP in-network reductions
	{func(n string) bool { return strings.Contains(n, "Libfabric") }, true},         // aws-ofi-nccl on EFA ("AWS Libfabric")
	{func(n string) bool { return strings.HasPrefix(n, "Socket") }, false},          // TCP: NCCL's "Socket", a plugin's socket transport
	{func(n string) bool { return strings.HasPrefix(n, "NCCL RDMA Plugin") }, true}, // a plugin's name used as the network
}

// ncclNetworkKind says whether NCCL's network n is RDMA; known is false
// for a network the table does not know.
func ncclNetworkKind(n string) (rdma, known bool) {
	for _, k := range ncclNetworks {
		if k.match(n) {
			return k.rdma, true
		}
	}
	return false, false
}

// ncclSocketCauses say why a host fell back to sockets, from its lines
// (the first match wins), and what to check first.
var ncclSocketCauses = []struct {
	when  func(NCCLHost) bool
	check string
}{
	{func(h NCCLHost) bool { return h.Env["NCCL_IB_DISABLE"] == "1" }, "NCCL_IB_DISABLE=1 is set: unset it"},
	{func(h NCCLHost) bool { return h.NoVerbs }, "NCCL could not open libibverbs: install rdma-core's libibverbs and its provider (libmlx5) in the image"},
	{func(h NCCLHost) bool { return h.NoIBDevice }, "NET/Socket: NCCL found no usable IB device: check /dev/infiniband in the pod " +
		"(its uverbs device and rdma_cm), that its RDMA device is in the pod's network namespace, and NCCL_IB_HCA"},
	{func(h NCCLHost) bool { return len(h.HCAs) > 0 }, "NCCL listed IB devices and still chose sockets: check NCCL_NET, NCCL_NET_PLUGIN and NCCL_IB_HCA"},
	{func(NCCLHost) bool { return true }, "NCCL printed no NET/IB line: check NCCL_IB_DISABLE, NCCL_NET and that libibverbs is in the image " +
		"(NCCL_DEBUG_SUBSYS=INIT,ENV,NET prints more)"},
}

// ncclGDRCauses say what to check first for an HCA without GPUDirect
// RDMA, by NCCL's reason (the first match wins).
var ncclGDRCauses = []struct {
	has   string
	check string
}{
	{"not supported by GPU", "load nvidia-peermem on the node; consumer GPUs have no GPUDirect RDMA at all"},
	{"no module", "GDR disabled (no module): load nvidia-peermem on the node (modprobe nvidia-peermem; the GPU Operator's driver.rdma.enabled)"},
	{"", "NCCL found neither nvidia-peermem (/sys/module/nvidia_peermem, /sys/kernel/mm/memory_peers/nv_mem) nor DMA-BUF for it: " +
		"load nvidia-peermem on the node, or use DMA-BUF (open GPU kernel modules, Linux 5.12 or later, NCCL 2.13 or later)"},
}

// ncclHints turn NCCL's own HINT lines into a finding of a check.
var ncclHints = []struct {
	has, check, what string
}{
	{"ACS is enabled", CheckNCCLGDR, "NCCL hints that PCIe ACS breaks GPUDirect RDMA (a local protection error): check ACS on the PCIe " +
		"switches between GPU and NIC first (disable it in the BIOS or with setpci); NCCL_NET_GDR_LEVEL=LOC confirms it"},
	{"incorrect GID index", CheckNCCLNetwork, "NCCL hints at a wrong NCCL_IB_GID_INDEX: check the GID table first (show_gids) for the RoCE v2 " +
		"IPv4 entry, or unset it (NCCL 2.19 and later pick one)"},
	{"not cross-rail connected", CheckNCCLNetwork, "NCCL hints that the NICs are not cross-rail connected: check the rails' cabling first, or set NCCL_CROSS_NIC=0"},
	{"NCCL_IB_TIMEOUT is set too short", CheckNCCLNetwork, "NCCL hints at retries exhausted: check the fabric for loss first (PFC or ECN on RoCE, " +
		"link errors), then NCCL_IB_TIMEOUT"},
}

// NCCLTransportVerdicts judges one result's NCCL INFO lines (what Judge
// does for each result that has them): for bench parse, which judges no
// other check.
func NCCLTransportVerdicts(in JudgeInput, l Labelled) []Verdict {
	in.defaults()
	return judgeNCCLTransport(in, l)
}

// judgeNCCLTransport judges the network (sockets where RDMA is expected),
// GPUDirect RDMA per HCA and on the channels, NCCL's hints, and whether
// the hosts agree. Nothing when the lines say nothing about the network.
func judgeNCCLTransport(in JudgeInput, l Labelled) []Verdict {
	t := l.Result.NCCLTransport
	if t == nil || !ncclHasFacts(t) {
		return nil
	}
	base := Verdict{Scenario: l.Scenario, Tool: l.Result.Tool}
	out := []Verdict{ncclNetworkVerdict(in, base, t)}
	out = append(out, ncclGDRVerdicts(in, base, t)...)
	out = append(out, ncclHostsVerdicts(base, t)...)
	return append(out, ncclHintVerdicts(base, t)...)
}

// ncclHasFacts reports whether any host's lines say something about the
// network.
func ncclHasFacts(t *NCCLTransport) bool {
	for _, h := range t.Hosts {
		if len(h.Networks) > 0 || len(h.NetChannels) > 0 || h.LocalChannels > 0 || len(h.HCAs) > 0 || len(h.GDR) > 0 ||
			h.NoIBDevice || h.NoVerbs || h.Socket != "" || len(h.Hints) > 0 {
			return true
		}
	}
	return false
}

// ncclHostNets are the networks a host chose or carried channels over.
func ncclHostNets(h NCCLHost) []string {
	nets := slices.Clone(h.Networks)
	for _, c := range h.NetChannels {
		if c.Send+c.Receive > 0 && !slices.Contains(nets, c.Net) {
			nets = append(nets, c.Net)
		}
	}
	slices.Sort(nets)
	return nets
}

// expectsRDMA says whether the input's profile or the result's scenario
// (bench plan's rdma) expects RDMA; tcp is the TCP scenario.
func expectsRDMA(in JudgeInput, scenario string) (rdma, tcp bool) {
	if scenario == in.Roles.TCP {
		return false, true
	}
	if p, err := ProfileNamed(in.Profile); err == nil && p.RDMA {
		return true, false
	}
	return scenario == in.Roles.RDMA, false
}

func ncclNetworkVerdict(in JudgeInput, v Verdict, t *NCCLTransport) Verdict {
	v.Check = CheckNCCLNetwork
	var socket, rdma, unknown, nets []string
	netCh, localCh, withNet := 0, 0, 0
	for _, h := range t.Hosts {
		hn := ncclHostNets(h)
		if len(hn) > 0 {
			withNet++
		}
		kinds := map[bool]bool{}
		for _, n := range hn {
			if !slices.Contains(nets, n) && len(nets) < maxNCCLList {
				nets = append(nets, n)
			}
			r, known := ncclNetworkKind(n)
			kinds[r] = kinds[r] || known
			if !known && (len(unknown) == 0 || unknown[len(unknown)-1] != h.Host) {
				unknown = append(unknown, h.Host)
			}
		}
		switch {
		case kinds[false]:
			socket = append(socket, h.Host)
		case kinds[true]:
			rdma = append(rdma, h.Host)
		}
		for _, c := range h.NetChannels {
			netCh += c.Send + c.Receive
		}
		localCh += h.LocalChannels
	}
	slices.Sort(nets)
	switch {
	case len(socket) > 0:
		return ncclSocketVerdict(in, v, t, socket, withNet)
	case len(nets) == 0 && localCh > 0:
		v.Status, v.Reason = StatusInfo, fmt.Sprintf("%d intra-node channels (P2P, SHM) and none through a network: "+
			"all ranks on one host? The network was not tested", localCh)
	case len(nets) == 0:
		v.Status, v.Reason = StatusSkip, "no \"Using network\" or channel line: run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET"
	case len(rdma) == 0:
		v.Status, v.Reason = StatusInfo, fmt.Sprintf("NCCL used %s: not a network this check knows, not judged", strings.Join(nets, ", "))
	case netCh == 0 && localCh > 0:
		v.Status, v.Reason = StatusInfo, fmt.Sprintf("NCCL chose %s, but all %d channels stayed inside a host (P2P, SHM): the network was not tested",
			strings.Join(nets, ", "), localCh)
	default:
		v.Status = StatusPass
		v.Reason = fmt.Sprintf("NCCL used %s on %s", strings.Join(nets, ", "), plural(len(rdma), "host"))
		if netCh > 0 {
			v.Reason += fmt.Sprintf(" (%s through the network)", plural(netCh, "channel"))
		}
		if len(unknown) > 0 {
			v.Reason += "; not judged: networks this check does not know on " + hostList(unknown)
		}
	}
	return v
}

// ncclSocketVerdict is the verdict of a job with hosts on TCP sockets:
// fail where RDMA is expected, info for the TCP scenario, a warning
// otherwise; what to check first, by host.
func ncclSocketVerdict(in JudgeInput, v Verdict, t *NCCLTransport, socket []string, withNet int) Verdict {
	rdma, tcp := expectsRDMA(in, v.Scenario)
	switch {
	case tcp:
		v.Status = StatusInfo
	case rdma:
		v.Status = StatusFail
	default:
		v.Status = StatusWarn
	}
	v.Reason = fmt.Sprintf("NCCL fell back to TCP sockets (NET/Socket) on %s", hostList(socket))
	if len(socket) < withNet {
		v.Reason += fmt.Sprintf(" (%d of the %d hosts that name their network)", len(socket), withNet)
	}
	byCause := map[int][]string{}
	onSocket := map[string]bool{}
	for _, h := range socket {
		onSocket[h] = true
	}
	for _, h := range t.Hosts {
		if !onSocket[h.Host] {
			continue
		}
		for i, c := range ncclSocketCauses {
			if c.when(h) {
				byCause[i] = append(byCause[i], h.Host)
				break
			}
		}
	}
	for i, c := range ncclSocketCauses {
		if hosts, ok := byCause[i]; ok {
			v.Reason += "; check first: " + c.check
			if len(byCause) > 1 {
				v.Reason += " (" + hostList(hosts) + ")"
			}
		}
	}
	switch {
	case tcp:
		v.Reason += "; TCP scenario, sockets expected"
	case !rdma:
		v.Reason += "; give the fabric (--profile) to fail this where RDMA is expected"
	}
	return v
}

// ncclHintVerdicts turn NCCL's HINT lines into warnings, one per hint.
func ncclHintVerdicts(base Verdict, t *NCCLTransport) []Verdict {
	var out []Verdict
	for _, k := range ncclHints {
		var hosts []string
		for _, h := range t.Hosts {
			if slices.ContainsFunc(h.Hints, func(s string) bool { return strings.Contains(s, k.has) }) {
				hosts = append(hosts, h.Host)
			}
		}
		if len(hosts) > 0 {
			v := base
			v.Check, v.Status, v.Reason = k.check, StatusWarn, k.what+" (on "+hostList(hosts)+")"
			out = append(out, v)
		}
	}
	return out
}

// hostList names up to 5 hosts ("(no host)" for lines without one).
func hostList(hosts []string) string {
	const show = 5
	names := make([]string, 0, min(len(hosts), show))
	for _, h := range hosts[:min(len(hosts), show)] {
		names = append(names, cmp.Or(h, "(no host)"))
	}
	s := strings.Join(names, ", ")
	if len(hosts) > show {
		s += fmt.Sprintf(" and %d more", len(hosts)-show)
	}
	return s
}
