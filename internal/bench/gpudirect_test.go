package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// perftestBW is an ib_write_bw result with one large-message row.
func perftestBW(gbps float64) Result {
	return Result{Tool: "ib_write_bw", Kind: KindPerftestBW, OK: true,
		PerftestBW: []PerftestBWRow{{Bytes: 65536, Iterations: 5000, BWAvgGbps: gbps}}}
}

// The published 8-GPU/4-NIC measurement (README, docs/alloc.md): 10.5 GB/s
// with the NIC under the GPU's PCIe switch, 3.5 GB/s with one across the
// host bridge on the same socket.
func TestGPUDirectAlignmentPublishedPair(t *testing.T) {
	t.Parallel()
	in := JudgeInput{LineRateGbps: 100, GPUDirect: GPUDirectClasses{Near: "PIX", Far: "PHB"}, Results: []Labelled{
		{Scenario: ScenarioGPUDirectNear, Result: perftestBW(84)},
		{Scenario: ScenarioGPUDirectFar, Result: perftestBW(28)},
	}}
	vs := Judge(in)
	got := findVerdict(t, vs, CheckGPUDirectAlignment, ScenarioGPUDirectNear)
	want := Verdict{Check: CheckGPUDirectAlignment, Scenario: ScenarioGPUDirectNear, Tool: "ib_write_bw", Status: StatusPass,
		Measured: 3, Target: 0.95, Unit: "x",
		Reason: "PIX 10.5 GB/s vs PHB 3.5 GB/s: 3.0x; NCCL would use GPUDirect only on the near NIC"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("verdict (-want +got):\n%s", d)
	}
	// The far run is slow on purpose: no line-rate FAIL for it.
	if far := findVerdict(t, vs, CheckLineRate, ScenarioGPUDirectFar); far.Status != StatusInfo {
		t.Errorf("far line-rate verdict = %+v, want info", far)
	}
}

func TestGPUDirectAlignmentTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		near, far float64 // Gb/s; 0: no result
		classes   GPUDirectClasses
		status    Status
		reason    string
	}{
		{"near slower than far", 28, 84, GPUDirectClasses{"PIX", "SYS"}, StatusFail, "is GPUDirect RDMA loaded"},
		{"within noise", 80, 82, GPUDirectClasses{"PXB", "NODE"}, StatusPass, "1.0x"},
		{"classes unknown", 84, 28, GPUDirectClasses{}, StatusPass, "near 10.5 GB/s vs far 3.5 GB/s: 3.0x; give the classes"},
		{"both within PXB", 84, 80, GPUDirectClasses{"PIX", "PXB"}, StatusPass, "NCCL would use GPUDirect on both"},
		{"neither within PXB", 40, 28, GPUDirectClasses{"PHB", "SYS"}, StatusPass, "on neither"},
		{"no far run", 84, 0, GPUDirectClasses{"PIX", "PHB"}, StatusSkip, `scenario "gpudirect-far"`},
		{"no near run", 0, 28, GPUDirectClasses{"PIX", "PHB"}, StatusSkip, `scenario "gpudirect-near"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := JudgeInput{GPUDirect: tc.classes}
			if tc.near > 0 {
				in.Results = append(in.Results, Labelled{Scenario: ScenarioGPUDirectNear, Result: perftestBW(tc.near)})
			}
			if tc.far > 0 {
				in.Results = append(in.Results, Labelled{Scenario: ScenarioGPUDirectFar, Result: perftestBW(tc.far)})
			}
			v := findVerdict(t, Judge(in), CheckGPUDirectAlignment, ScenarioGPUDirectNear)
			if v.Status != tc.status || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict = %+v, want %s with %q", v, tc.status, tc.reason)
			}
		})
	}
}

func TestGPUDirectAlignmentAbsentWithoutPair(t *testing.T) {
	t.Parallel()
	for _, v := range Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: perftestBW(90)}}}) {
		if v.Check == CheckGPUDirectAlignment {
			t.Errorf("unexpected %+v", v)
		}
	}
}

// bench plan --bare-metal labels its hostNetwork pair bare-metal and the
// pods stay rdma: with no pod scenario the rdma runs are compared.
func TestPodVsBareMetalTakesRDMAWithoutPodScenario(t *testing.T) {
	t.Parallel()
	vs := Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: perftestBW(90)}, {Scenario: "bare-metal", Result: perftestBW(91)}}})
	v := findVerdict(t, vs, CheckPodBareMetal, "rdma")
	if v.Status != StatusPass || !strings.Contains(v.Reason, "pod 90 Gb/s vs bare metal 91 Gb/s") {
		t.Errorf("verdict %+v", v)
	}
}

// A unit conversion's 36.595218514 Gb/s is printed as 36.60, as the
// line-rate reason prints it, not beside it unrounded.
func TestReasonsRoundValues(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{36.595218514: "36.60", 90: "90", 1021: "1021", 0.04223193: "0.0422", 533.333333: "533.33"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
	vs := Judge(JudgeInput{LineRateGbps: 40, Results: []Labelled{{Scenario: "pod", Result: perftestBW(36.595218514)}, {Scenario: "bare-metal", Result: perftestBW(36.7)}}})
	pod, line := findVerdict(t, vs, CheckPodBareMetal, "pod"), findVerdict(t, vs, CheckLineRate, "pod")
	if !strings.Contains(pod.Reason, "pod 36.60 Gb/s vs bare metal 36.70 Gb/s") || !strings.Contains(line.Reason, "36.60 Gb/s at 64 KiB") {
		t.Errorf("reasons:\n%s\n%s", pod.Reason, line.Reason)
	}
}
