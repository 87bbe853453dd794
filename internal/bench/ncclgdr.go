package bench

import (
	"fmt"
	"slices"
	"strings"
)

// GPUDirect RDMA states of a host's inter-node channels (ncclGDRState).
// NCCL writes received data straight into GPU memory when GPUDirect RDMA
// is on for the GPU and its NIC; it reads GPU memory for sends only under
// more conditions (from Ampere on, or NCCL_NET_GDR_READ=1): receives say
// whether GPUDirect RDMA is on.
const (
	gdrAll     = "GDRDMA on every receive channel"
	gdrNone    = "no GDRDMA"
	gdrPartial = "GDRDMA on some receive channels"
)

// ncclRDMANet says whether a network's lines count for GPUDirect RDMA:
// any but the known non-RDMA ones (sockets); "" is NCCL's IB of versions
// that do not name the network.
func ncclRDMANet(net string) bool {
	rdma, known := ncclNetworkKind(net)
	return net == "" || rdma || !known
}

// OnRDMA reports whether the statement is about an RDMA network's HCA:
// NCCL prints one for the socket transport's interfaces too, which never
// have GPUDirect RDMA.
func (g NCCLGDR) OnRDMA() bool { return ncclRDMANet(g.Net) }

// gdrCounts are a host's RDMA inter-node channels by direction.
type gdrCounts struct {
	recv, recvGDR, send, sendGDR int
}

func ncclGDRCounts(h NCCLHost) gdrCounts {
	var c gdrCounts
	for _, n := range h.NetChannels {
		if !ncclRDMANet(n.Net) {
			continue
		}
		c.recv += n.Receive
		c.recvGDR += n.ReceiveGDRDMA
		c.send += n.Send
		c.sendGDR += n.SendGDRDMA
	}
	return c
}

// ncclGDRState is gdrAll, gdrNone or gdrPartial by the host's receive
// channels (its sends when it printed no receive); "" without channels.
func ncclGDRState(h NCCLHost) string {
	c := ncclGDRCounts(h)
	n, g := c.recv, c.recvGDR
	if n == 0 {
		n, g = c.send, c.sendGDR
	}
	switch {
	case n == 0:
		return ""
	case g == n:
		return gdrAll
	case g == 0 && c.sendGDR == 0:
		return gdrNone
	}
	return gdrPartial
}

// ncclHCAName is the name of the HCA a GDR line is about: its own, the
// one of its index on the host's "NET/IB : Using" line, else "#index".
func ncclHCAName(h NCCLHost, g NCCLGDR) string {
	if g.HCA != "" {
		return g.HCA
	}
	return ncclHCAIndexName(h, g.Index)
}

func ncclHCAIndexName(h NCCLHost, i int) string {
	for _, a := range h.HCAs {
		if a.Index == i && a.Name != "" {
			return a.Name
		}
	}
	return fmt.Sprintf("#%d", i)
}

// ncclGDRVerdicts: one verdict per HCA NCCL says has no GPUDirect RDMA
// (fail when the topology says a GPU is near it, info when none is, a
// warning when the topology is not known), then one for the inter-node
// channels of the job as a whole.
func ncclGDRVerdicts(in JudgeInput, base Verdict, t *NCCLTransport) []Verdict {
	type off struct{ hosts, reasons []string }
	disabled := map[string]*off{}
	var names []string
	for _, h := range t.Hosts {
		for _, g := range h.GDR {
			if g.Enabled || !g.OnRDMA() {
				continue
			}
			name := ncclHCAName(h, g)
			d := disabled[name]
			if d == nil {
				d = &off{}
				disabled[name] = d
				names = append(names, name)
			}
			if n := len(d.hosts); n == 0 || d.hosts[n-1] != h.Host { // hosts come one after the other
				d.hosts = append(d.hosts, h.Host)
			}
			if g.Reason != "" && !slices.Contains(d.reasons, g.Reason) && len(d.reasons) < maxGDRReasons {
				d.reasons = append(d.reasons, g.Reason)
			}
		}
	}
	slices.Sort(names)
	var out []Verdict
	for i, name := range names {
		if i == maxGDRVerdicts {
			v := base
			v.Check, v.Status = CheckNCCLGDR, StatusWarn
			v.Reason = fmt.Sprintf("GPUDirect RDMA disabled for %d more HCAs (%s ...): bench parse --json lists them", len(names)-i, name)
			out = append(out, v)
			break
		}
		d := disabled[name]
		v := base
		v.Check = CheckNCCLGDR
		v.Reason = fmt.Sprintf("GPUDirect RDMA disabled for HCA %s on %s", name, hostList(d.hosts))
		if len(d.reasons) > 0 {
			v.Reason += " (NCCL: " + strings.Join(d.reasons, "; ") + ")"
		}
		switch near, known := in.NearHCAs[name]; {
		case known && near:
			v.Status = StatusFail
			v.Reason += "; a GPU is near it (PIX or PXB): its traffic is staged through host memory"
		case known:
			v.Status = StatusInfo
			v.Reason += "; no GPU is near it: NCCL would not use GPUDirect RDMA through it anyway"
		default:
			v.Status = StatusWarn
			v.Reason += "; give the topology (--sysfs or --machine) to say whether a GPU is near it"
		}
		v.Reason += "; check first: " + ncclGDRCause(d.reasons)
		out = append(out, v)
	}
	if v, ok := ncclGDRChannelVerdict(in, base, t, len(names) > 0); ok {
		out = append(out, v)
	}
	return out
}

// Bounds of the per-HCA verdicts: one verdict per HCA up to
// maxGDRVerdicts, then one for the rest; up to maxGDRReasons of NCCL's
// reasons each.
const (
	maxGDRVerdicts = 64
	maxGDRReasons  = 4
)

// ncclGDRCause is what to check first for NCCL's reasons.
func ncclGDRCause(reasons []string) string {
	for _, c := range ncclGDRCauses {
		if c.has == "" || slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, c.has) }) {
			return c.check
		}
	}
	return ""
}

// ncclGDRChannelVerdict judges GPUDirect RDMA on the job's inter-node
// channels: pass when every host receives with it, a warning when a host
// has it on some channels only or no host has it; hosts that differ
// (some with, some without) are the nccl-hosts check's. hcaOff says an
// HCA verdict already explains its absence.
func ncclGDRChannelVerdict(in JudgeInput, base Verdict, t *NCCLTransport, hcaOff bool) (Verdict, bool) {
	states := map[string][]string{}
	var total gdrCounts
	withChannels := 0
	for _, h := range t.Hosts {
		s := ncclGDRState(h)
		if s == "" {
			continue
		}
		withChannels++
		states[s] = append(states[s], h.Host)
		c := ncclGDRCounts(h)
		total.recv += c.recv
		total.recvGDR += c.recvGDR
		total.send += c.send
		total.sendGDR += c.sendGDR
	}
	v := base
	v.Check = CheckNCCLGDR
	n := total.recv + total.send
	switch {
	case withChannels == 0:
		return v, false
	case len(states[gdrPartial]) > 0:
		v.Status = StatusWarn
		v.Reason = fmt.Sprintf("GPUDirect RDMA on only some inter-node receive channels of %s: NCCL decides per GPU and NIC; "+
			"check first: %s", hostList(states[gdrPartial]), ncclFarCause(t))
	case len(states[gdrAll]) == withChannels:
		v.Status = StatusPass
		v.Reason = fmt.Sprintf("GPUDirect RDMA (GDRDMA) on %d of %d inter-node channels", total.recvGDR+total.sendGDR, n)
		if total.sendGDR < total.send {
			v.Reason += "; every receive has it, sends without it read host memory: NCCL reads GPU memory for sends only " +
				"from Ampere on (or with NCCL_NET_GDR_READ=1)"
		}
	case len(states[gdrNone]) == withChannels:
		v.Status = StatusWarn
		v.Reason = fmt.Sprintf("no inter-node channel carries GPUDirect RDMA (0 of %d): GPU memory is staged through host memory", n)
		if ncclNoHCANear(in, t) {
			v.Status = StatusInfo
			v.Reason += "; no GPU is near any of the HCAs (the topology says so): expected"
			break
		}
		if hcaOff {
			v.Reason += "; the HCAs above have no GPUDirect RDMA"
		} else {
			v.Reason += "; check first: " + ncclFarCause(t)
		}
	default:
		return v, false // some hosts with, some without: nccl-hosts names them
	}
	return v, true
}

// ncclFarCause is what to check first when NCCL left GPUDirect RDMA off
// with every HCA able to do it.
func ncclFarCause(t *NCCLTransport) string {
	for _, h := range t.Hosts {
		if lvl, ok := h.Env["NCCL_NET_GDR_LEVEL"]; ok {
			return fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s is set on %s", lvl, cmpHost(h.Host))
		}
	}
	for _, h := range t.Hosts {
		for _, p := range h.GDRPaths {
			if !p.Enabled {
				return fmt.Sprintf("NCCL finds GPUs too far from their NIC (GPU %s and HCA %s on %s: distance %s, beyond NCCL_NET_GDR_LEVEL, "+
					"PXB by default): compare nvidia-smi topo -m; in a VM or container NCCL may not see the PCIe switches (give it NCCL_TOPO_FILE)",
					p.GPU, ncclHCAIndexName(h, p.Index), cmpHost(h.Host), p.Distance)
			}
		}
	}
	return "nvidia-peermem on the nodes, NCCL_NET_GDR_LEVEL, and the GPUs' distance to their NICs (nvidia-smi topo -m)"
}

// ncclNoHCANear says the topology knows every HCA of the job and no GPU
// is near any of them.
func ncclNoHCANear(in JudgeInput, t *NCCLTransport) bool {
	if len(in.NearHCAs) == 0 {
		return false
	}
	seen := false
	for _, h := range t.Hosts {
		for _, a := range h.HCAs {
			near, known := in.NearHCAs[a.Name]
			if !known || near {
				return false
			}
			seen = true
		}
	}
	return seen
}

func cmpHost(h string) string { return hostList([]string{h}) }
