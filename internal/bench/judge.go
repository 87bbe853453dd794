package bench

import (
	"fmt"
	"math"
	"strings"
)

// Status is the outcome of one check.
type Status string

// Statuses. Info and Skip never fail a report.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	StatusWarn Status = "warn"
	StatusInfo Status = "info"
	StatusSkip Status = "skip"
)

// Checks.
const (
	CheckRun           = "run"
	CheckLineRate      = "line-rate"
	CheckPodBareMetal  = "pod-vs-bare-metal"
	CheckRDMAvsTCP     = "rdma-vs-tcp"
	CheckNCCLBusBW     = "nccl-busbw"
	DefaultLargeBytes  = 65536
	roceOverheadBytes  = 82 // preamble+SFD 8, Ethernet 14, FCS 4, IFG 12, IPv4 20, UDP 8, BTH 12, ICRC 4
	ibOverheadBytes    = 26 // LRH 8, BTH 12, ICRC 4, VCRC 2
	defaultLineRateFr  = 0.90
	defaultPodTol      = 0.02
	defaultMinSpeedup  = 1.5
	defaultNCCLFr      = 0.90
	defaultPodName     = "pod"
	defaultBareName    = "bare-metal"
	defaultRDMAName    = "rdma"
	defaultTCPName     = "tcp"
	overLineRateMargin = 1.01
)

// Labelled is one parsed result under a scenario name ("rdma", "pod", ...).
// A scenario may hold several results (say a bandwidth and a latency run,
// or training runs on 1, 2 and 4 nodes).
type Labelled struct {
	Scenario string
	Result   Result
	// Nodes is how many nodes the run used (0: not given); the scaling
	// table orders a scenario's training runs by it.
	Nodes int
}

// Thresholds are the pass marks of the checks. A zero Thresholds means
// DefaultThresholds; otherwise zero fields other than PodTolerance take
// their defaults.
type Thresholds struct {
	// LineRateFraction: perftest large-message bandwidth must reach this
	// fraction of the line rate (x2 for bidirectional runs). Default 0.90.
	LineRateFraction float64
	// PodTolerance: a pod may be this much worse than bare metal. Default 0.02.
	PodTolerance float64
	// MinSpeedup: RDMA must beat TCP by this factor. Default 1.5.
	MinSpeedup float64
	// NCCLFraction: nccl-tests peak bus bandwidth must reach this fraction
	// of NICs x line rate. Default 0.90.
	NCCLFraction float64
	// LargeMessageBytes: perftest rows at least this large count as large
	// messages. Default 65536.
	LargeMessageBytes int64
	// MinScalingEfficiency: a training run must reach this fraction of
	// linear scaling over its scenario's smallest run. Default 0.90.
	MinScalingEfficiency float64
	// MinTrainingGain: RDMA training throughput must beat TCP's by this
	// factor at the largest size both ran. Default 1.10.
	MinTrainingGain float64
	// MaxLatencyFactor: osu_latency's small-message latency passes up to
	// this many times the fabric's expected latency (ExpectedLatencies).
	// Default 2.
	MaxLatencyFactor float64
	// BaselineTolerance: a training run's per-GPU throughput may be this
	// much below the baseline run's. Default 0.05.
	BaselineTolerance float64
	// GPUDirectLineRateFraction: the gpudirect-near run (GPU memory
	// through the GPU's rail NIC) passes at this fraction of the line
	// rate, or at LineRateFraction when that is lower. Default 0.80.
	GPUDirectLineRateFraction float64
}

// DefaultThresholds returns the defaults documented on Thresholds.
func DefaultThresholds() Thresholds {
	return Thresholds{LineRateFraction: defaultLineRateFr, PodTolerance: defaultPodTol,
		MinSpeedup: defaultMinSpeedup, NCCLFraction: defaultNCCLFr, LargeMessageBytes: DefaultLargeBytes,
		MinScalingEfficiency: defaultMinScalingEff, MinTrainingGain: defaultMinTrainingGain,
		MaxLatencyFactor: defaultMaxLatencyFact, BaselineTolerance: defaultBaselineTol,
		GPUDirectLineRateFraction: defaultGPUDirectLineRateFr}
}

// Roles name the scenarios the comparisons use.
type Roles struct {
	Pod, BareMetal, RDMA, TCP string
}

// DefaultRoles returns pod, bare-metal, rdma and tcp.
func DefaultRoles() Roles {
	return Roles{Pod: defaultPodName, BareMetal: defaultBareName, RDMA: defaultRDMAName, TCP: defaultTCPName}
}

// JudgeInput is everything the checks look at.
type JudgeInput struct {
	Results      []Labelled
	LineRateGbps float64 // one NIC port; 0 skips line-rate checks
	NICs         int     // NICs per node used by nccl-tests; 0 skips that check
	// GPUsPerNode sizes training runs whose log does not state its GPU
	// count (nodes x GPUsPerNode); 0: unknown.
	GPUsPerNode int
	// LinkType is the fabric's link layer, "IB" or "Ethernet" (from the
	// topology or the profile); "" takes it from the results when they
	// state it. osu_latency is judged against its expected latency.
	LinkType   string
	Thresholds Thresholds
	Roles      Roles
	// GPUDirect names the classes of the gpudirect-near and -far NICs.
	GPUDirect GPUDirectClasses
	// Baseline, when set, is a previous training run of the same model
	// every training run's per-GPU throughput is judged against.
	Baseline *Result
	// Profile is the fabric profile the marks come from ("" for none):
	// on a fabric whose profile expects RDMA (Profile.RDMA) a job whose
	// NCCL fell back to TCP sockets fails.
	Profile string
	// NearHCAs says, per RDMA device name ("mlx5_0"), whether a GPU is
	// near it (PIX or PXB: NCCL uses GPUDirect RDMA through it by
	// default), from the topology; a device absent, or a nil map, is not
	// known. An HCA without GPUDirect RDMA fails when a GPU is near it and
	// is a warning when not known.
	NearHCAs map[string]bool
}

// Verdict is the outcome of one check with its reason.
type Verdict struct {
	Check    string  `json:"check"`
	Scenario string  `json:"scenario"`
	Tool     string  `json:"tool,omitempty"`
	Status   Status  `json:"status"`
	Measured float64 `json:"measured,omitempty"`
	Target   float64 `json:"target,omitempty"`
	Unit     string  `json:"unit,omitempty"`
	Reason   string  `json:"reason"`
}

// Failed reports whether any verdict failed.
func Failed(vs []Verdict) bool {
	for _, v := range vs {
		if v.Status == StatusFail {
			return true
		}
	}
	return false
}

// MaxGoodputFraction is the highest share of the line rate RDMA payload can
// reach at an MTU: mtu/(mtu+overhead), with 82 bytes of RoCE v2 framing on
// Ethernet (1024 -> 92.6%, 4096 -> 98.0%) and 26 bytes on InfiniBand
// (4096 -> 99.4%). It returns 0 when the link type or MTU is unknown.
func MaxGoodputFraction(linkType string, mtu int) float64 {
	if mtu <= 0 {
		return 0
	}
	switch {
	case strings.EqualFold(linkType, "Ethernet"):
		return float64(mtu) / float64(mtu+roceOverheadBytes)
	case strings.EqualFold(linkType, "IB"), strings.EqualFold(linkType, "InfiniBand"):
		return float64(mtu) / float64(mtu+ibOverheadBytes)
	}
	return 0
}

func (in *JudgeInput) defaults() {
	d := DefaultThresholds()
	t := &in.Thresholds
	if *t == (Thresholds{}) {
		*t = d
	}
	// Written as !(x > 0) so that NaN takes the default too.
	if !(t.LineRateFraction > 0) || math.IsInf(t.LineRateFraction, 0) {
		t.LineRateFraction = d.LineRateFraction
	}
	if !(t.PodTolerance > 0) || math.IsInf(t.PodTolerance, 0) {
		t.PodTolerance = 0
	}
	if !(t.MinSpeedup > 0) || math.IsInf(t.MinSpeedup, 0) {
		t.MinSpeedup = d.MinSpeedup
	}
	if !(t.NCCLFraction > 0) || math.IsInf(t.NCCLFraction, 0) {
		t.NCCLFraction = d.NCCLFraction
	}
	if !(in.LineRateGbps > 0) || math.IsInf(in.LineRateGbps, 0) {
		in.LineRateGbps = 0 // unknown: line-rate checks are skipped
	}
	if t.LargeMessageBytes <= 0 {
		t.LargeMessageBytes = d.LargeMessageBytes
	}
	if !(t.MinScalingEfficiency > 0) || math.IsInf(t.MinScalingEfficiency, 0) {
		t.MinScalingEfficiency = d.MinScalingEfficiency
	}
	if !(t.MinTrainingGain > 0) || math.IsInf(t.MinTrainingGain, 0) {
		t.MinTrainingGain = d.MinTrainingGain
	}
	if !(t.MaxLatencyFactor > 0) || math.IsInf(t.MaxLatencyFactor, 0) {
		t.MaxLatencyFactor = d.MaxLatencyFactor
	}
	if !(t.BaselineTolerance > 0 && t.BaselineTolerance < 1) {
		t.BaselineTolerance = d.BaselineTolerance
	}
	if !(t.GPUDirectLineRateFraction > 0) || math.IsInf(t.GPUDirectLineRateFraction, 0) {
		t.GPUDirectLineRateFraction = d.GPUDirectLineRateFraction
	}
	if in.LinkType == "" {
		in.LinkType = LinkTypeOf(in.Results)
	}
	dr := DefaultRoles()
	r := &in.Roles
	for _, p := range []struct {
		v *string
		d string
	}{{&r.Pod, dr.Pod}, {&r.BareMetal, dr.BareMetal}, {&r.RDMA, dr.RDMA}, {&r.TCP, dr.TCP}} {
		if *p.v == "" {
			*p.v = p.d
		}
	}
}

// Judge runs every check that the input allows, in a stable order: each
// result's run and line-rate checks and the checks of its NCCL INFO lines,
// then the comparisons, then the training scaling checks.
func Judge(in JudgeInput) []Verdict {
	in.defaults()
	var out []Verdict
	for _, l := range in.Results {
		r := l.Result
		switch k, ok := kindRowOf(r.Kind); {
		case !r.OK:
			out = append(out, Verdict{Check: CheckRun, Scenario: l.Scenario, Tool: r.Tool, Status: StatusFail,
				Reason: "run failed: " + r.Error})
		case ok && k.verdict != nil:
			out = append(out, k.verdict(in, l))
		}
		// A failed run's NCCL lines still say which network it was on.
		out = append(out, judgeNCCLTransport(in, l)...)
	}
	out = append(out, compare(in, CheckPodBareMetal, podRole(in), in.Roles.BareMetal)...)
	out = append(out, compare(in, CheckRDMAvsTCP, in.Roles.RDMA, in.Roles.TCP)...)
	out = append(out, judgeGPUDirect(in)...)
	out = append(out, judgeScaling(in)...)
	out = append(out, judgeBaseline(in)...)
	for i := range out {
		// A ratio of extreme but finite inputs (a speed-up over a TCP run
		// of 1e-300 Gb/s) can overflow; JSON has no infinity.
		out[i].Measured, out[i].Target = finite(out[i].Measured), finite(out[i].Target)
	}
	return out
}

// podRole is the pod scenario, or the rdma scenario when no result has
// the pod scenario: bench plan --bare-metal's hostNetwork pair (bare-metal)
// is the baseline of the rdma pods.
func podRole(in JudgeInput) string {
	for _, l := range in.Results {
		if l.Scenario == in.Roles.Pod {
			return in.Roles.Pod
		}
	}
	return in.Roles.RDMA
}

// finite maps ±Inf to the largest float of that sign and NaN to 0.
func finite(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}

// LargeMessageBW is the best average bandwidth (Gb/s) over rows of at least
// minBytes, or over all rows when none is that large; bytes is the message
// size it was measured at.
func LargeMessageBW(rows []PerftestBWRow, minBytes int64) (gbps float64, bytes int64, ok bool) {
	best := math.Inf(-1)
	for pass := 0; pass < 2 && !ok; pass++ {
		for _, row := range rows {
			if pass == 0 && row.Bytes < minBytes {
				continue
			}
			if row.BWAvgGbps > best {
				best, bytes, ok = row.BWAvgGbps, row.Bytes, true
			}
		}
	}
	return best, bytes, ok
}

// peakBW is one run's peak bandwidth as the line-rate check judges it; the
// tool's own verdict function fills it from what it parsed.
type peakBW struct {
	// What opens every reason: the peak as the tool states it
	// ("92.44 Gb/s at 256 KiB", "peak 96.48 Gb/s (12.06 GB/s)").
	What string
	// Bidirectional doubles the line rate.
	Bidirectional bool
	// Ceiling is the highest share of the line rate the link can carry
	// (MaxGoodputFraction), 0 when unknown: the line rate itself. Note,
	// appended after the pass mark, says why.
	Ceiling float64
	Note    string
	// Exempt, when set, makes the verdict info with this appended (the far
	// NIC of a GPUDirect pair); a TCP scenario is info before it.
	Exempt string
	// Fraction, when set, is the pass mark instead of LineRateFraction
	// (the GPUDirect run's); Why, appended after it, says why.
	Fraction float64
	Why      string
}

// judgeLineRate is the line-rate judgement of every tool: v.Measured (Gb/s)
// of v.Scenario against the line rate (x2 for bidirectional runs) times
// LineRateFraction. It fills Target, Status and Reason of v, which the
// caller has filled otherwise.
func judgeLineRate(in JudgeInput, v Verdict, p peakBW) Verdict {
	if in.LineRateGbps <= 0 {
		v.Status, v.Reason = StatusSkip, p.What+"; no line rate given"
		return v
	}
	line, dir := in.LineRateGbps, ""
	if p.Bidirectional {
		line, dir = 2*line, " (x2: bidirectional)"
	}
	mark := in.Thresholds.LineRateFraction
	if p.Fraction > 0 {
		mark = p.Fraction
	}
	v.Target = line * mark
	frac := v.Measured / line
	v.Reason = fmt.Sprintf("%s = %.1f%% of %g Gb/s line rate%s; pass at %.0f%%",
		p.What, 100*frac, line, dir, 100*mark) + p.Why + p.Note
	switch {
	case v.Scenario == in.Roles.TCP:
		v.Status = StatusInfo
		v.Reason += "; TCP scenario, not expected to reach line rate"
	case p.Exempt != "":
		v.Status = StatusInfo
		v.Reason += "; " + p.Exempt
	case p.Ceiling > 0 && frac > p.Ceiling*overLineRateMargin, p.Ceiling == 0 && frac > overLineRateMargin:
		v.Status = StatusWarn
		v.Reason += "; above what the link can carry: is the line rate right?"
	case v.Measured >= v.Target:
		v.Status = StatusPass
	default:
		v.Status = StatusFail
	}
	return v
}

// lineRateVerdict judges perftest's large-message bandwidth against the
// line rate, capped by what RDMA payload can reach at the run's MTU.
func lineRateVerdict(in JudgeInput, l Labelled) Verdict {
	r := l.Result
	v := Verdict{Check: CheckLineRate, Scenario: l.Scenario, Tool: r.Tool, Unit: "Gb/s"}
	bw, size, ok := LargeMessageBW(r.PerftestBW, in.Thresholds.LargeMessageBytes)
	if !ok {
		v.Status, v.Reason = StatusSkip, "no bandwidth rows"
		return v
	}
	v.Measured = bw
	if large := in.Thresholds.LargeMessageBytes; size < large {
		v.Status, v.Reason = StatusSkip, fmt.Sprintf("%.2f Gb/s at %s, no row of at least %s: the line rate is judged on large messages only (run with -a, or -s %d or more)",
			bw, FormatBytes(size), FormatBytes(large), large)
		return v
	}
	p := peakBW{
		What:          fmt.Sprintf("%.2f Gb/s at %s", bw, FormatBytes(size)),
		Bidirectional: r.Info.Bidirectional,
		Ceiling:       MaxGoodputFraction(r.Info.LinkType, r.Info.MTU),
	}
	if p.Ceiling > 0 {
		proto := "InfiniBand"
		if strings.EqualFold(r.Info.LinkType, "Ethernet") {
			proto = "RoCE"
		}
		p.Note = fmt.Sprintf("; %s at MTU %d cannot exceed about %.1f%%", proto, r.Info.MTU, 100*p.Ceiling)
	}
	switch l.Scenario {
	case ScenarioGPUDirectFar:
		p.Exempt = "the far NIC of the GPUDirect pair, slow on purpose: judged in the gpudirect-alignment check"
	case ScenarioGPUDirectNear:
		p.Fraction, p.Why = gpudirectLineRateMark(in.Thresholds)
	}
	return judgeLineRate(in, v, p)
}

func ncclVerdict(in JudgeInput, l Labelled) Verdict {
	r := l.Result
	v := Verdict{Check: CheckNCCLBusBW, Scenario: l.Scenario, Tool: r.Tool, Unit: "GB/s"}
	bus, ok := r.Summary[SumMaxBusBWGBps]
	if !ok {
		v.Status, v.Reason = StatusSkip, "no bus bandwidth rows"
		return v
	}
	v.Measured = bus
	if in.LineRateGbps <= 0 || in.NICs <= 0 {
		v.Status, v.Reason = StatusSkip, fmt.Sprintf("peak bus bandwidth %.2f GB/s; give the line rate and --nics to judge it", bus)
		return v
	}
	netGBps := float64(in.NICs) * in.LineRateGbps / 8
	v.Target = netGBps * in.Thresholds.NCCLFraction
	frac := bus / netGBps
	v.Reason = fmt.Sprintf("peak bus bandwidth %.2f GB/s = %.1f%% of %d NICs x %g Gb/s = %.1f GB/s; pass at %.0f%%",
		bus, 100*frac, in.NICs, in.LineRateGbps, netGBps, 100*in.Thresholds.NCCLFraction)
	if avg, ok := r.Summary[SumAvgBusBWGBps]; ok {
		v.Reason += fmt.Sprintf(" (the printed average over all sizes, %.2f GB/s, is not the peak)", avg)
	}
	switch {
	case l.Scenario == in.Roles.TCP:
		v.Status = StatusInfo
		v.Reason += "; TCP scenario, not expected to reach line rate"
	case frac > overLineRateMargin && r.Info.Nodes == 1:
		v.Status = StatusWarn
		v.Reason += "; all ranks on one node: traffic stayed on NVLink/PCIe, not the network"
	case frac > overLineRateMargin && (r.Info.Nodes == 2 || r.Info.Nodes == 0):
		v.Status = StatusWarn
		v.Reason += "; above the network's rate: on 2 nodes NCCL's tree algorithms can exceed NICs x line rate " +
			"because busbw assumes a ring; rerun with NCCL_ALGO=Ring for a comparable number"
	case frac > overLineRateMargin:
		v.Status = StatusWarn
		v.Reason += "; above the network's rate: are --nics and the line rate right?"
	case bus >= v.Target:
		v.Status = StatusPass
	default:
		v.Status = StatusFail
	}
	return v
}
