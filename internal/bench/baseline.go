package bench

import "fmt"

// Single training runs: per-GPU (per-CPU) throughput against a previous
// run of the same model (the baseline), or an info line saying what would
// judge it.
const (
	CheckTrainingBaseline = "training-vs-baseline"
	defaultBaselineTol    = 0.05
)

// PerWorker is a training result's throughput per GPU, or per CPU worker
// for Horovod on CPUs; per says which ("GPU" or "CPU").
func PerWorker(r Result) (v float64, per string, ok bool) {
	if r.Kind != KindTraining {
		return 0, "", false
	}
	if v, ok := r.Summary[SumThroughputPerGPU]; ok {
		return v, "GPU", true
	}
	if v, ok := r.Summary[SumThroughputPerCPU]; ok {
		return v, "CPU", true
	}
	tot, ok := r.Summary[SumTotalThroughput]
	switch {
	case !ok:
		return 0, "", false
	case r.Info.GPUs > 0:
		return tot / float64(r.Info.GPUs), "GPU", true
	case r.Info.CPUs > 0:
		return tot / float64(r.Info.CPUs), "CPU", true
	}
	return 0, "", false
}

// judgeBaseline compares every successful training run with the baseline
// run; without a baseline, a scenario's lone training run gets an info
// verdict (its scaling needs a second size).
func judgeBaseline(in JudgeInput) []Verdict {
	var out []Verdict
	count := map[string]int{}
	for _, l := range in.Results {
		if l.Result.OK && l.Result.Kind == KindTraining {
			count[l.Scenario]++
		}
	}
	for _, l := range in.Results {
		r := l.Result
		if !r.OK || r.Kind != KindTraining {
			continue
		}
		v := Verdict{Check: CheckTrainingBaseline, Scenario: l.Scenario, Tool: r.Tool, Unit: r.Info.Unit}
		if r.Info.GPUs == 0 && r.Info.CPUs == 0 && in.GPUsPerNode > 0 && l.Nodes > 0 {
			r.Info.GPUs = in.GPUsPerNode * l.Nodes // as the scaling table sizes it
		}
		got, per, ok := PerWorker(r)
		if !ok {
			if in.Baseline != nil {
				v.Status, v.Reason = StatusSkip, "no per-GPU throughput: the log states neither it nor its GPU count (give --gpus-per-node)"
				out = append(out, v)
			}
			continue
		}
		v.Measured = got
		what := fmt.Sprintf("per-%s %s %s%s", per, num(round(got)), r.Info.Unit, model(r))
		if in.Baseline == nil {
			if count[l.Scenario] == 1 {
				v.Status, v.Reason = StatusInfo, what+"; give --baseline a previous run of the same model to judge it (or runs at several node counts for the scaling table)"
				out = append(out, v)
			}
			continue
		}
		b := *in.Baseline
		want, bper, ok := PerWorker(b)
		switch {
		case !ok || !b.OK || b.Kind != KindTraining:
			v.Status, v.Reason = StatusSkip, what+"; the baseline has no per-GPU throughput"
		case bper != per:
			v.Status, v.Reason = StatusSkip, fmt.Sprintf("%s; the baseline ran on %ss: not comparable", what, bper)
		case r.Info.Model != "" && b.Info.Model != "" && r.Info.Model != b.Info.Model:
			v.Status, v.Reason = StatusSkip, fmt.Sprintf("%s; the baseline trained %s: not the same model", what, b.Info.Model)
		case b.Info.Unit != r.Info.Unit:
			v.Status, v.Reason = StatusSkip, fmt.Sprintf("%s; the baseline counts %s", what, b.Info.Unit)
		default:
			tol := in.Thresholds.BaselineTolerance
			v.Target = want * (1 - tol)
			v.Reason = fmt.Sprintf("%s vs the baseline's %s %s (%s): %.1f%%; pass at %.0f%%",
				what, num(round(want)), b.Info.Unit, orUnknown(b.Source), 100*got/want, 100*(1-tol))
			v.Status = StatusFail
			if want > 0 && got >= v.Target {
				v.Status = StatusPass
			}
		}
		out = append(out, v)
	}
	return out
}

func model(r Result) string {
	if r.Info.Model == "" {
		return ""
	}
	return " (" + r.Info.Model + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "--baseline"
	}
	return s
}
