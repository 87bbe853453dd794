package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/topology"
)

// maxPrintedHosts bounds the hosts bench parse prints (--json lists all).
const maxPrintedHosts = 20

// printNCCLTransport writes what an output's NCCL INFO lines say, one
// line per host, and the verdicts of their checks.
func printNCCLTransport(w io.Writer, t *bench.NCCLTransport, vs []bench.Verdict) error {
	head := "  NCCL"
	if t.Version != "" {
		head += " " + t.Version
	}
	fmt.Fprintf(w, "%s INFO lines of %d host(s):\n", head, len(t.Hosts))
	for i, h := range t.Hosts {
		if i == maxPrintedHosts {
			fmt.Fprintf(w, "    ... and %d more hosts (--json lists them)\n", len(t.Hosts)-i)
			break
		}
		fmt.Fprintf(w, "    %s: %s\n", orNoHost(h.Host), hostSummary(h))
	}
	if t.Capped {
		fmt.Fprintln(w, "    (lines of more hosts were not read)")
	}
	if len(vs) == 0 {
		fmt.Fprintln(w, "  no line about the network: run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range vs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", strings.ToUpper(string(v.Status)), v.Check, v.Reason)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print NCCL verdicts: %w", err)
	}
	return nil
}

func orNoHost(h string) string {
	if h == "" {
		return "(no host)"
	}
	return h
}

// hostSummary is one host's facts: "network IB; HCAs mlx5_0:1/RoCE
// (GID 3, MTU 4096); GPUDirect RDMA on mlx5_0; channels 4 via IB (4
// GDRDMA), 2 intra-node".
func hostSummary(h bench.NCCLHost) string {
	var parts []string
	if len(h.Networks) > 0 {
		parts = append(parts, "network "+strings.Join(h.Networks, ", "))
	}
	if len(h.Plugins) > 0 {
		parts = append(parts, "plugin "+strings.Join(h.Plugins, ", "))
	}
	if h.NoVerbs {
		parts = append(parts, "libibverbs not found")
	}
	if h.NoIBDevice {
		parts = append(parts, "NET/IB: no device found")
	}
	if len(h.HCAs) > 0 {
		var hcas []string
		for _, a := range h.HCAs {
			s := fmt.Sprintf("#%d", a.Index)
			if a.Name != "" {
				s = fmt.Sprintf("%s:%d/%s", a.Name, a.Port, a.LinkLayer)
			}
			var qp []string
			if a.GIDIndex != nil {
				qp = append(qp, fmt.Sprintf("GID %d", *a.GIDIndex))
			}
			if a.MTU > 0 {
				qp = append(qp, fmt.Sprintf("MTU %d", a.MTU))
			}
			if len(qp) > 0 {
				s += " (" + strings.Join(qp, ", ") + ")"
			}
			hcas = append(hcas, s)
		}
		parts = append(parts, "HCAs "+strings.Join(hcas, " "))
	}
	if h.Socket != "" {
		parts = append(parts, "sockets "+h.Socket)
	}
	var on, off []string
	for _, g := range h.GDR {
		if !g.OnRDMA() {
			continue
		}
		name := g.HCA
		if name == "" {
			name = fmt.Sprintf("#%d", g.Index)
		}
		switch {
		case g.Enabled:
			on = append(on, name)
		case g.Reason != "":
			off = append(off, name+" ("+g.Reason+")")
		default:
			off = append(off, name)
		}
	}
	if len(on) > 0 {
		parts = append(parts, "GPUDirect RDMA on "+strings.Join(on, " "))
	}
	if len(off) > 0 {
		parts = append(parts, "GPUDirect RDMA off "+strings.Join(off, " "))
	}
	var ch []string
	for _, c := range h.NetChannels {
		ch = append(ch, fmt.Sprintf("%d via %s (%d GDRDMA)", c.Send+c.Receive, c.Net, c.SendGDRDMA+c.ReceiveGDRDMA))
	}
	if h.LocalChannels > 0 {
		ch = append(ch, fmt.Sprintf("%d intra-node", h.LocalChannels))
	}
	if len(ch) > 0 {
		parts = append(parts, "channels "+strings.Join(ch, ", "))
	}
	if len(parts) == 0 {
		return "nothing about the network"
	}
	return strings.Join(parts, "; ")
}

// nearHCAs says, per RDMA device of the topology (its VFs' too), whether
// a GPU is near it (PIX or PXB): the map bench.JudgeInput.NearHCAs wants.
func nearHCAs(t *topology.Topology) map[string]bool {
	out := map[string]bool{}
	for _, n := range t.NICs {
		near := false
		for _, g := range t.GPUs {
			near = near || t.Class(g.PCI, n.PCI).GPUDirect()
		}
		if n.RDMA != "" {
			out[n.RDMA] = near
		}
		for _, vf := range n.VFs {
			if vf.RDMA != "" {
				out[vf.RDMA] = near
			}
		}
	}
	return out
}
