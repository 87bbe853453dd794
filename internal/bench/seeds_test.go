package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seedVerdicts is "check scenario status" for every verdict of checks.
func seedVerdicts(vs []Verdict, checks ...string) []string {
	var out []string
	for _, v := range vs {
		for _, c := range checks {
			if v.Check == c {
				out = append(out, v.Check+" "+v.Scenario+" "+string(v.Status))
			}
		}
	}
	return out
}

// The seeds' published numbers judged under the profile of their fabric
// reach their authors' conclusions (docs/bench.md, "The seeds' numbers
// under their profile"; the PVRDMA, OSU and 2-NIC DGX-1 rows are
// TestProfileVirtualPVRDMAScalingSeed, TestProfileInfiniBandOSUSeeds and
// TestNCCLTwoNICDGX1Seed).
func TestSeedsUnderTheirProfiles(t *testing.T) {
	t.Parallel()
	vector := func(name string) Result { return Parse(loadVector(t, name)) }
	for _, tc := range []struct {
		name    string
		profile string
		in      JudgeInput
		checks  []string
		want    []string
		reason  string // in the first verdict of checks
	}{
		{
			// NVIDIA cloud-native-docs, gpu-operator-rdma.rst: ib_write_bw
			// between two RoCE pods, 92.4 of 100 Gb/s at MTU 1024 (the
			// framing allows 92.6%), shown as the working setup.
			name: "NVIDIA RoCE pods 92.4 of 100 Gb/s", profile: ProfileRoCELossless,
			in:     JudgeInput{LineRateGbps: 100, Results: []Labelled{{Scenario: "rdma", Result: vector(roceVector)}}},
			checks: []string{CheckLineRate}, want: []string{"line-rate rdma pass"},
			reason: "92.44 Gb/s at 256 KiB = 92.4% of 100 Gb/s line rate; pass at 90%",
		},
		{
			// Azure/aks-rdma-infiniband tests/expected-output.md: ib_write_bw
			// between two pods on 200G HDR, 196.64 Gb/s; the doc expects
			// more than 190.
			name: "Azure AKS HDR 196.6 of 200 Gb/s", profile: ProfileInfiniBand,
			in: JudgeInput{LineRateGbps: 200, Results: []Labelled{{Scenario: "rdma",
				Result: vector("perftest_ib_write_bw_all_gbits_k8s_pod_ib_hdr200__azure_aks-rdma-infiniband.txt")}}},
			checks: []string{CheckLineRate}, want: []string{"line-rate rdma pass"},
			reason: "196.64 Gb/s at 4 MiB = 98.3% of 200 Gb/s line rate; pass at 90%",
		},
		{
			// The same doc: all_reduce_perf over 2 x 8 GPUs, 187.22 GB/s
			// bus bandwidth ("last busbw < 180 => setup problem": 90% of 8
			// NICs x 200 Gb/s, the infiniband mark), and over IPoIB 3.15
			// GB/s ("< 3 => problem"): RDMA far ahead.
			name: "Azure AKS nccl-tests 187.22 GB/s over 8 x 200G", profile: ProfileInfiniBand,
			in: JudgeInput{LineRateGbps: 200, NICs: 8, Results: []Labelled{
				{Scenario: "rdma", Result: vector(ncclIBVector)}, {Scenario: "tcp", Result: vector(ncclTCPVector)}}},
			checks: []string{CheckNCCLBusBW, CheckRDMAvsTCP},
			want:   []string{"nccl-busbw rdma pass", "nccl-busbw tcp info", "rdma-vs-tcp rdma pass"},
			reason: "187.22 GB/s = 93.6% of 8 NICs x 200 Gb/s = 200.0 GB/s; pass at 90%",
		},
		{
			// The brief's 8-GPU/4-NIC node (README, docs/alloc.md; 100GbE
			// RoCE, machines/pfn_mn2a.json): 10.5 GB/s through the NIC under
			// the GPU's switch, its author's aligned case, 3.5 GB/s across
			// the host bridge. The 90% mark failed the near run.
			name: "GPUDirect pair 10.5 vs 3.5 GB/s on 100GbE", profile: ProfileRoCELossless,
			in: JudgeInput{LineRateGbps: 100, GPUDirect: GPUDirectClasses{Near: "PIX", Far: "PHB"}, Results: []Labelled{
				{Scenario: ScenarioGPUDirectNear, Result: perftestBW(84)}, {Scenario: ScenarioGPUDirectFar, Result: perftestBW(28)}}},
			checks: []string{CheckLineRate, CheckGPUDirectAlignment},
			want:   []string{"line-rate gpudirect-near pass", "line-rate gpudirect-far info", "gpudirect-alignment gpudirect-near pass"},
			reason: "84.00 Gb/s at 64 KiB = 84.0% of 100 Gb/s line rate; pass at 80% (GPU memory through the GPU's rail NIC: the GPUDirect mark)",
		},
		{
			// rapidsai/ucx-py docs/source/ucx-debug.rst: ucx_perftest with
			// CUDA memory on both sides of a DGX-1's 100 Gb/s EDR NICs,
			// 10474.41 MB/s (MiB/s: 87.87 Gb/s), "should confirm
			// InfiniBand bandwidth to be in the 10+ GB/s range".
			name: "UCX-Py CUDA memory 10474.41 MiB/s on EDR", profile: ProfileInfiniBand,
			in: JudgeInput{LineRateGbps: 100, Results: []Labelled{
				{Scenario: ScenarioGPUDirectNear, Result: perftestBW(10474.41 * 0.008388608)}}},
			checks: []string{CheckLineRate}, want: []string{"line-rate gpudirect-near pass"},
			reason: "87.87 Gb/s at 64 KiB = 87.9% of 100 Gb/s line rate; pass at 80%",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := ProfileNamed(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			in := tc.in
			in.Thresholds, in.LinkType = p.Thresholds, p.LinkType
			vs := Judge(in)
			if d := cmp.Diff(tc.want, seedVerdicts(vs, tc.checks...)); d != "" {
				t.Errorf("verdicts (-want +got):\n%s", d)
			}
			if Failed(vs) {
				t.Errorf("a seed its author calls good failed: %+v", vs)
			}
			for _, v := range vs {
				if v.Check == tc.checks[0] {
					if !strings.Contains(v.Reason, tc.reason) {
						t.Errorf("reason %q lacks %q", v.Reason, tc.reason)
					}
					break
				}
			}
		})
	}
}

// The GPUDirect mark is the near run's alone: the same 84 Gb/s from host
// memory fails the 90% mark, a near run at 9.5 GB/s fails the GPUDirect
// one, and a profile whose line-rate mark is lower (virtual, 70%) judges
// the near run by that.
func TestGPUDirectLineRateMark(t *testing.T) {
	t.Parallel()
	roce, _ := ProfileNamed(ProfileRoCELossless)
	virtual, _ := ProfileNamed(ProfileVirtual)
	for _, tc := range []struct {
		name     string
		scenario string
		gbps     float64
		th       Thresholds
		status   Status
		target   float64
		reason   string
	}{
		{"host memory at 84%", "rdma", 84, roce.Thresholds, StatusFail, 90, "pass at 90%"},
		{"GPU memory at 84%", ScenarioGPUDirectNear, 84, roce.Thresholds, StatusPass, 80, "the GPUDirect mark"},
		{"GPU memory at 76%", ScenarioGPUDirectNear, 76, roce.Thresholds, StatusFail, 80, "pass at 80%"},
		{"defaults", ScenarioGPUDirectNear, 84, Thresholds{}, StatusPass, 80, "pass at 80%"},
		{"lower line-rate mark wins", ScenarioGPUDirectNear, 72, virtual.Thresholds, StatusPass, 70, "pass at 70%"},
		{"--pass-gpudirect-line-rate", ScenarioGPUDirectNear, 84, Thresholds{LineRateFraction: 0.9, GPUDirectLineRateFraction: 0.85}, StatusFail, 85, "pass at 85%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := findVerdict(t, Judge(JudgeInput{LineRateGbps: 100, Thresholds: tc.th,
				Results: []Labelled{{Scenario: tc.scenario, Result: perftestBW(tc.gbps)}}}), CheckLineRate, tc.scenario)
			if v.Status != tc.status || !near(v.Target, tc.target) || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict = %+v, want %s at %g with %q", v, tc.status, tc.target, tc.reason)
			}
		})
	}
}
