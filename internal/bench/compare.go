package bench

import (
	"fmt"
	"math"
	"strconv"
)

// Metric is the one number a result is compared by.
type Metric struct {
	Name         string // "large-message bandwidth"
	Value        float64
	Unit         string
	HigherBetter bool
}

// HeadlineMetric returns the number a result is compared by: large-message
// bandwidth for perftest bandwidth runs, lowest typical latency for perftest
// latency runs, peak bus bandwidth for nccl-tests, peak bandwidth or lowest
// average latency for OSU, the job's throughput for training.
func HeadlineMetric(r Result, largeBytes int64) (Metric, bool) {
	if k, ok := kindRowOf(r.Kind); ok {
		return k.headline(r, largeBytes)
	}
	return Metric{}, false
}

// compare pairs every result of scenario a with the result of the same kind
// in scenario b: pod vs bare metal (within a tolerance) or RDMA vs TCP (a
// speed-up).
func compare(in JudgeInput, check, a, b string) []Verdict {
	var out []Verdict
	partner := false
	for _, l := range in.Results {
		partner = partner || l.Scenario == b
	}
	if !partner {
		return nil // nothing to compare with: not a finding
	}
	for _, la := range in.Results {
		// Training runs are compared size by size in the scaling checks.
		if la.Scenario != a || !la.Result.OK || la.Result.Kind == KindTraining {
			continue
		}
		ma, ok := HeadlineMetric(la.Result, in.Thresholds.LargeMessageBytes)
		if !ok {
			continue
		}
		found := false
		for _, lb := range in.Results {
			if lb.Scenario != b || !lb.Result.OK || !comparable(check, la.Result.Kind, lb.Result.Kind) {
				continue
			}
			mb, ok := HeadlineMetric(lb.Result, in.Thresholds.LargeMessageBytes)
			if !ok {
				continue
			}
			found = true
			if check == CheckPodBareMetal {
				out = append(out, podVerdict(in, la, ma, mb))
			} else {
				out = append(out, speedupVerdict(in, la, ma, mb))
			}
		}
		if !found {
			out = append(out, Verdict{Check: check, Scenario: a, Tool: la.Result.Tool, Status: StatusSkip,
				Reason: fmt.Sprintf("no successful %s result of the same kind in scenario %q to compare with", b, b)})
		}
	}
	return out
}

func podVerdict(in JudgeInput, la Labelled, pod, bare Metric) Verdict {
	v := Verdict{Check: CheckPodBareMetal, Scenario: la.Scenario, Tool: la.Result.Tool, Measured: pod.Value, Unit: pod.Unit}
	tol := in.Thresholds.PodTolerance
	var worse float64 // how much worse the pod is, as a fraction of bare metal
	if bare.Value != 0 {
		if pod.HigherBetter {
			worse = (bare.Value - pod.Value) / bare.Value
			v.Target = bare.Value * (1 - tol)
		} else {
			worse = (pod.Value - bare.Value) / bare.Value
			v.Target = bare.Value * (1 + tol)
		}
	}
	word := "below"
	if !pod.HigherBetter {
		word = "above"
	}
	v.Reason = fmt.Sprintf("%s: pod %s %s vs bare metal %s %s: %.2f%% %s bare metal; pass within %.1f%%",
		pod.Name, num(pod.Value), pod.Unit, num(bare.Value), bare.Unit, 100*worse, word, 100*tol)
	if worse < 0 {
		v.Reason = fmt.Sprintf("%s: pod %s %s vs bare metal %s %s: pod is %.2f%% better; pass within %.1f%%",
			pod.Name, num(pod.Value), pod.Unit, num(bare.Value), bare.Unit, -100*worse, 100*tol)
	}
	v.Status = StatusFail
	if bare.Value != 0 && worse <= tol {
		v.Status = StatusPass
	}
	return v
}

func speedupVerdict(in JudgeInput, la Labelled, rdma, tcp Metric) Verdict {
	v := Verdict{Check: CheckRDMAvsTCP, Scenario: la.Scenario, Tool: la.Result.Tool, Unit: "x", Target: in.Thresholds.MinSpeedup}
	var speedup float64
	switch {
	case rdma.HigherBetter && tcp.Value > 0:
		speedup = rdma.Value / tcp.Value
	case !rdma.HigherBetter && rdma.Value > 0:
		speedup = tcp.Value / rdma.Value
	}
	v.Measured = speedup
	v.Reason = fmt.Sprintf("%s: RDMA %s %s vs TCP %s %s: %.1fx speed-up; pass at %.1fx",
		rdma.Name, num(rdma.Value), rdma.Unit, num(tcp.Value), tcp.Unit, speedup, in.Thresholds.MinSpeedup)
	v.Status = StatusFail
	if speedup >= in.Thresholds.MinSpeedup {
		v.Status = StatusPass
	}
	return v
}

func num(v float64) string { return FormatValue(v) }

// FormatValue prints a measured value as every verdict and report does:
// whole numbers as they are (90, 1021), others with two decimals (36.60,
// never the 36.595218514 a unit conversion gives), below 1 three
// significant digits (0.0422).
func FormatValue(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case math.Abs(v) < 1:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// FormatBytes prints a message size with binary units: 8 B, 64 KiB, 8 MiB.
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 && int64(v)%1024 == 0 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[i]
}

// comparable reports whether results of kinds a and b are compared: the
// same kind, or for RDMA vs TCP a perftest bandwidth run against iperf3
// (the TCP variant of bench plan's pod pair).
func comparable(check string, a, b Kind) bool {
	return a == b || check == CheckRDMAvsTCP && a == KindPerftestBW && b == KindIperf3
}
