package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/topology"
)

// Column is one column of the policy comparison.
type Column struct {
	// Name heads the column in text ("GDR"), Title in HTML ("GPUDirect
	// GPUs"); Note says what it holds ("" when the title says it all).
	Name, Title, Note string
}

// Table is the policy comparison of a Result, computed once and rendered
// by `railyard simulate` as text and by package simreport as HTML: a row
// of formatted cells per policy, in the order of Result.Policies.
type Table struct {
	Columns []Column
	Rows    [][]string
}

// Table builds the comparison table.
func (r *Result) Table() Table {
	t := Table{Columns: []Column{
		{"POLICY", "Policy", ""},
		{"BINDING", "Binding", fmt.Sprintf("when the policy chose: allocate (kubelet's GetPreferredAllocation; the pod's GPUs known for %.0f%% of pods, kubelet's map order), sandbox (late binding: NUMA tokens at allocate time, devices once the GPUs are known), claim (with the GPUs, every free device open: DRA, the optimum)", 100*r.Config.GPUsKnown)},
		{"GDR", "GPUDirect GPUs", "placed GPUs whose nearest allocated NIC is PIX or PXB (NCCL's default GPUDirect RDMA limit)"},
		{"xKUBELET", "vs kubelet", "GPUDirect fraction over the kubelet baseline's"},
		{"xNUMA", "vs numa", "GPUDirect fraction over the numa baseline's"},
		{"%OPTIMAL", "Share of optimal", "GPUDirect fraction as a share of optimal's"},
		{"GB/s", "Mean GB/s per GPU", "modelled per-GPU bandwidth by the class of the nearest NIC"},
	}}
	for _, cl := range topology.Classes {
		note := ""
		if cl == topology.Classes[0] {
			note = "share of placed GPUs by the class of their nearest allocated NIC (this and the next class columns)"
		}
		t.Columns = append(t.Columns, Column{cl.String(), cl.String(), note})
	}
	t.Columns = append(t.Columns,
		Column{"REJECTED", "Rejected pods", ""},
		Column{"STRANDED", "Stranded devices", "mean free devices (share of all) on PFs whose GPUDirect GPUs are all busy, sampled at every arrival"},
		Column{"P50 µs", "Decision p50 µs", ""},
		Column{"P99 µs", "Decision p99 µs", "wall time per pod of the policy's decisions inside the simulator"},
	)
	kub, hasKub := r.Policy("kubelet")
	numa, hasNUMA := r.Policy("numa")
	opt, hasOpt := r.Policy("optimal")
	for _, p := range r.Policies {
		ofOpt := "–"
		if hasOpt && opt.GDRFraction > 0 {
			ofOpt = fmt.Sprintf("%.1f%%", 100*p.GDRFraction/opt.GDRFraction)
		}
		row := []string{p.Name, string(p.Binding), percent(p.GDRFraction),
			ratio(p.GDRFraction, kub.GDRFraction, hasKub), ratio(p.GDRFraction, numa.GDRFraction, hasNUMA), ofOpt,
			fmt.Sprintf("%.2f", p.MeanGbps)}
		for _, cl := range topology.Classes {
			share := 0.0
			if p.GPUs > 0 {
				share = float64(p.ClassCount(cl)) / float64(p.GPUs)
			}
			row = append(row, percent(share))
		}
		row = append(row, fmt.Sprint(p.Rejected), fmt.Sprintf("%.1f (%s)", p.StrandedMean, percent(p.StrandedFraction)),
			fmt.Sprintf("%.1f", p.AllocP50us), fmt.Sprintf("%.1f", p.AllocP99us))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Setting is one line of a result's settings.
type Setting struct{ Name, Value string }

// Settings describes what the result simulated, for the text header and
// the report's settings table.
func (r *Result) Settings() []Setting {
	c := r.Config
	mix := make([]string, len(c.Mix))
	for i, m := range c.Mix {
		mix[i] = fmt.Sprintf("%d GPU × %g", m.GPUs, m.Weight)
	}
	devices := map[DeviceMode]string{PerGPU: "one per GPU", PerPod: "one per pod"}[c.Devices]
	out := []Setting{
		{"Machine", r.Machine},
		{"Nodes", fmt.Sprint(r.Nodes)},
		{"Per node", fmt.Sprintf("%d GPUs, %d RDMA PFs, %d allocatable devices", c.GPUsPerNode, c.PFsPerNode, c.DevicesPerNode)},
		{"Pod arrivals / events per policy", fmt.Sprintf("%d / %d", r.Pods, r.Events)},
		{"Workload mix (weights)", strings.Join(mix, ", ")},
		{"NIC devices per pod", devices},
		{"Offered GPU load", fmt.Sprintf("%.0f%%", 100*c.Load)},
		{"Topology Manager policy", c.TopologyPolicy},
		{"Scheduler scoring", c.Scheduler},
		{"GPUs allocated before the NIC (allocate-time policies know them)", fmt.Sprintf("%.0f%% of pods", 100*c.GPUsKnown)},
		{"Bandwidth model (GB/s per GPU)", c.Bandwidth},
		{"Seed", fmt.Sprint(c.Seed)},
	}
	if r.Elapsed > 0 {
		out = append(out, Setting{"Simulated in", r.Elapsed.Round(time.Millisecond).String()})
	}
	return out
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// ratio formats a/b as "×1.23"; "–" without a baseline, "n/a" when b is 0.
func ratio(a, b float64, haveBaseline bool) string {
	switch {
	case !haveBaseline:
		return "–"
	case b == 0 && a == 0:
		return "×1.00"
	case b == 0:
		return "n/a"
	}
	return fmt.Sprintf("×%.2f", a/b)
}
