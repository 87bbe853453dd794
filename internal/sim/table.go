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
		Column{"HELD/GPU", "Devices held per GPU", "devices placed pods held per placed GPU, and the share of them no GPU of their pod would use (on a PF farther from each of its GPUs than that GPU's nearest): what one VF on every PF (all-pfs) strands"},
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
		held, idle := 0.0, 0.0
		if p.GPUs > 0 && p.DevicesHeld > 0 {
			held, idle = float64(p.DevicesHeld)/float64(p.GPUs), float64(p.DevicesIdle)/float64(p.DevicesHeld)
		}
		row = append(row, fmt.Sprint(p.Rejected), fmt.Sprintf("%.1f (%s)", p.StrandedMean, percent(p.StrandedFraction)),
			fmt.Sprintf("%.2f (%s idle)", held, percent(idle)),
			fmt.Sprintf("%.1f", p.AllocP50us), fmt.Sprintf("%.1f", p.AllocP99us))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// JobTable builds the comparison for jobs of several pods; ok is false
// when the workload had none.
func (r *Result) JobTable() (t Table, ok bool) {
	t.Columns = []Column{
		{"POLICY", "Policy", ""},
		{"JOB", "Job placement", "how a job's pods are placed: per-pod (each pod on its own, no constraint across pods: the scheduler, kubelet and the policy, or a per-pod claim) or rail-set (one rail set for the whole job)"},
		{"PLACED", "Jobs placed", "jobs of several pods placed, of those that arrived"},
		{"RAIL-CONSISTENT", "Rail-consistent jobs", "placed jobs whose pods all use the same set of in-node rail indexes (their NICs'), so that NIC i of one pod talks to NIC i of the others through leaf i"},
		{"ONE-LEAF", "Under one leaf layer", "placed jobs rail-consistent with every pod in one scalable unit: their traffic never crosses the spine"},
		{"WAITED", "Jobs that waited", "placed jobs that waited for one rail set although the cluster had free GPUs enough"},
		{"WAIT MEAN", "Mean wait", fmt.Sprintf("over placed jobs, in mean pod lifetimes (the simulator's unit of time); a job gives up after %g", r.Config.MaxWait)},
		{"WAIT P99", "p99 wait", ""},
		{"RAIL-STRANDED", "GPUs stranded by rails", "GPUs of jobs waiting for one rail set, averaged over the simulated time (share of the cluster's GPUs)"},
		{"RE-CHOSEN", "Re-chosen", fmt.Sprintf("(rail-set-at-admission) jobs moved to another rail set after waiting %g with no pod started", r.Config.RechooseAfter)},
		{"HELD IDLE", "GPUs held idle", "(rail-set-at-admission) GPUs of pods started while others of their job waited, averaged over the simulated time; jobs partly started"},
		{"REJECTED", "Jobs rejected", "no room, or (rail-set) no room on one rail set within the wait limit"},
	}
	for _, p := range r.Policies {
		j := p.MultiPod
		if j == nil {
			continue
		}
		ok = true
		placement := "per-pod"
		if p.Job.OneSet() {
			placement = string(p.Job)
		}
		t.Rows = append(t.Rows, []string{p.Name, placement, fmt.Sprintf("%d / %d", j.Placed, j.Jobs),
			percent(j.RailConsistent), percent(j.OneLeafLayer), percent(j.Waited),
			fmt.Sprintf("%.3f", j.WaitMean), fmt.Sprintf("%.3f", j.WaitP99),
			fmt.Sprintf("%.1f (%s)", j.RailStrandedGPUs, percent(j.RailStrandedFraction)),
			fmt.Sprint(j.Rechosen), fmt.Sprintf("%.1f; %d", j.HeldIdleGPUs, j.PartlyStarted), fmt.Sprint(j.Rejected)})
	}
	return t, ok
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
		if m.PodCount() > 1 {
			mix[i] = fmt.Sprintf("%d pods of %d GPU × %g", m.Pods, m.GPUs, m.Weight)
		}
	}
	devices := map[DeviceMode]string{PerGPU: "one per GPU", PerPod: "one per pod", AllPFs: "one on every rail PF (all-pfs)"}[c.Devices]
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
	if multiPod(c.Mix) {
		unit := "the whole cluster"
		if c.SUNodes > 0 {
			unit = fmt.Sprintf("%d nodes", c.SUNodes)
		}
		out = append(out,
			Setting{"Fabric", fmt.Sprintf("rail-optimized: %d rails per node, NIC i of every node on leaf i of its scalable unit; a unit is %s", c.RailsPerNode, unit)},
			Setting{"Jobs / pods", fmt.Sprintf("%d / %d", r.Jobs, r.Pods)},
			Setting{"Longest wait for one rail set", fmt.Sprintf("%g mean pod lifetimes", c.MaxWait)},
			Setting{"Re-choice after (rail-set-at-admission)", fmt.Sprintf("%g mean pod lifetimes", c.RechooseAfter)})
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
