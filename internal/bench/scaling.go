package bench

import (
	"fmt"
	"sort"
)

// Scaling checks.
const (
	CheckScalingEfficiency = "scaling-efficiency"
	defaultMinScalingEff   = 0.90 // Horovod's published 90% for ResNet-101 and Inception V3
	defaultMinTrainingGain = 1.10
)

// ScalingPoint is one training run: the job's throughput at a size.
type ScalingPoint struct {
	Scenario   string  `json:"scenario"`
	Nodes      int     `json:"nodes,omitempty"` // 0: not given
	GPUs       int     `json:"gpus,omitempty"`  // 0: not known
	Throughput float64 `json:"throughput"`      // the job's samples (images) per second
	Unit       string  `json:"unit,omitempty"`
	Tool       string  `json:"tool,omitempty"`
	Source     string  `json:"source,omitempty"`
}

// ScalingRow is a point with its speed-up over the scenario's smallest run
// (the base) and its efficiency against linear scaling:
// speed-up / (size / base size), where size is the GPU count when every
// run of the scenario states it, else the node count.
type ScalingRow struct {
	ScalingPoint
	Speedup    float64 `json:"speedup"`
	Efficiency float64 `json:"efficiency"`
	// By says what the size counts: "gpus" or "nodes".
	By   string `json:"by"`
	Base bool   `json:"base,omitempty"`
}

// ScalingPoints picks the successful training results that carry a job
// throughput. The GPU count is the log's; when the log does not state it,
// nodes x gpusPerNode when both are known.
func ScalingPoints(results []Labelled, gpusPerNode int) []ScalingPoint {
	var out []ScalingPoint
	for _, l := range results {
		total, gpus, ok := TrainingThroughput(l.Result)
		if !ok || !l.Result.OK {
			continue
		}
		if gpus == 0 && l.Result.Info.CPUs == 0 && gpusPerNode > 0 && l.Nodes > 0 { // CPU workers stay CPU
			gpus = gpusPerNode * l.Nodes
		}
		out = append(out, ScalingPoint{Scenario: l.Scenario, Nodes: l.Nodes, GPUs: gpus, Throughput: total,
			Unit: l.Result.Info.Unit, Tool: l.Result.Tool, Source: l.Result.Source})
	}
	return out
}

// ScalingTable groups points by scenario (in order of first appearance),
// sorts each by size and computes speed-up and efficiency against the
// scenario's smallest run. Points whose size is unknown (no nodes, no
// GPUs), or not positive throughput, are left out; Skipped says which.
func ScalingTable(points []ScalingPoint) (rows []ScalingRow, skipped []ScalingPoint) {
	var order []string
	groups := map[string][]ScalingPoint{}
	for _, p := range points {
		if _, ok := groups[p.Scenario]; !ok {
			order = append(order, p.Scenario)
		}
		groups[p.Scenario] = append(groups[p.Scenario], p)
	}
	for _, sc := range order {
		g := groups[sc]
		by := "gpus"
		for _, p := range g {
			if p.GPUs <= 0 {
				by = "nodes"
			}
		}
		size := func(p ScalingPoint) int {
			if by == "gpus" {
				return p.GPUs
			}
			return p.Nodes
		}
		var ok []ScalingPoint
		for _, p := range g {
			if size(p) > 0 && p.Throughput > 0 {
				ok = append(ok, p)
			} else {
				skipped = append(skipped, p)
			}
		}
		sort.SliceStable(ok, func(i, j int) bool { return size(ok[i]) < size(ok[j]) })
		for i, p := range ok {
			base := ok[0]
			row := ScalingRow{ScalingPoint: p, By: by, Base: i == 0}
			row.Speedup = finite(p.Throughput / base.Throughput)
			row.Efficiency = finite(row.Speedup / (float64(size(p)) / float64(size(base))))
			rows = append(rows, row)
		}
	}
	return rows, skipped
}

func (r ScalingRow) label() string {
	switch {
	case r.Nodes > 0 && r.GPUs > 0:
		return plural(r.Nodes, "node") + ", " + plural(r.GPUs, "GPU")
	case r.GPUs > 0:
		return plural(r.GPUs, "GPU")
	}
	return plural(r.Nodes, "node")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// judgeScaling flags every run whose efficiency is under the threshold
// (info for the TCP scenario) and reports RDMA's gain over TCP for each
// size both ran: judged at the largest such size, info at the others.
func judgeScaling(in JudgeInput) []Verdict {
	rows, skipped := ScalingTable(ScalingPoints(in.Results, in.GPUsPerNode))
	var out []Verdict
	for _, p := range skipped {
		out = append(out, Verdict{Check: CheckScalingEfficiency, Scenario: p.Scenario, Tool: p.Tool, Status: StatusSkip,
			Reason: fmt.Sprintf("%s: %s %s with no node or GPU count: label it SCENARIO@NODES or give --gpus-per-node",
				p.Source, num(p.Throughput), p.Unit)})
	}
	th := in.Thresholds.MinScalingEfficiency
	for _, r := range rows {
		if r.Base {
			continue
		}
		v := Verdict{Check: CheckScalingEfficiency, Scenario: r.Scenario, Tool: r.Tool, Measured: r.Efficiency, Target: th}
		var base ScalingRow
		for _, b := range rows {
			if b.Scenario == r.Scenario && b.Base {
				base = b
			}
		}
		v.Reason = fmt.Sprintf("%s: %s %s = %.2fx %s's %s %s at %s: %.1f%% of linear; pass at %.0f%%",
			r.label(), num(r.Throughput), r.Unit, r.Speedup, r.Scenario, num(base.Throughput), base.Unit, base.label(),
			100*r.Efficiency, 100*th)
		switch {
		case r.Scenario == in.Roles.TCP:
			v.Status = StatusInfo
			v.Reason += "; TCP scenario, not expected to scale linearly"
		case r.Efficiency >= th:
			v.Status = StatusPass
		default:
			v.Status = StatusFail
		}
		out = append(out, v)
	}
	return append(out, trainingGain(in, rows)...)
}

// trainingGain compares the rdma and tcp scenarios at each size both ran.
func trainingGain(in JudgeInput, rows []ScalingRow) []Verdict {
	type pair struct{ rdma, tcp ScalingRow }
	var pairs []pair
	for _, a := range rows {
		if a.Scenario != in.Roles.RDMA {
			continue
		}
		for _, b := range rows {
			if b.Scenario == in.Roles.TCP && sameSize(a, b) {
				pairs = append(pairs, pair{a, b})
				break
			}
		}
	}
	var out []Verdict
	for i, p := range pairs {
		gain := finite(p.rdma.Throughput / p.tcp.Throughput)
		v := Verdict{Check: CheckRDMAvsTCP, Scenario: p.rdma.Scenario, Tool: p.rdma.Tool, Measured: gain, Unit: "x",
			Target: in.Thresholds.MinTrainingGain}
		v.Reason = fmt.Sprintf("training at %s: RDMA %s %s vs TCP %s %s: %.2fx",
			p.rdma.label(), num(p.rdma.Throughput), p.rdma.Unit, num(p.tcp.Throughput), p.tcp.Unit, gain)
		switch {
		case p.rdma.Nodes == 1 && p.tcp.Nodes == 1:
			v.Status = StatusInfo
			v.Reason += "; one node: the network carries no traffic"
		case i < len(pairs)-1:
			v.Status = StatusInfo
			v.Reason += "; judged at the largest size both ran"
		case gain >= in.Thresholds.MinTrainingGain:
			v.Status = StatusPass
			v.Reason += fmt.Sprintf("; pass at %.2fx", in.Thresholds.MinTrainingGain)
		default:
			v.Status = StatusFail
			v.Reason += fmt.Sprintf("; pass at %.2fx: is RDMA used (NCCL_DEBUG=INFO shows NET/IB), or is the job not network-bound?",
				in.Thresholds.MinTrainingGain)
		}
		out = append(out, v)
	}
	return out
}

// sameSize matches runs by node count when both have one, else by GPUs.
func sameSize(a, b ScalingRow) bool {
	if a.Nodes > 0 && b.Nodes > 0 {
		return a.Nodes == b.Nodes
	}
	return a.GPUs > 0 && a.GPUs == b.GPUs
}
