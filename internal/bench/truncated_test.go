package bench

import (
	"strings"
	"testing"
)

// A perftest sweep cut off after its 16 KiB row (no closing line) is not
// an ok run: its large messages, which the line rate is judged on, are
// missing.
func TestPerftestCutOffAfter16KiBIsNotOK(t *testing.T) {
	t.Parallel()
	in := string(loadVector(t, "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt"))
	i := strings.Index(in, "\n 16384 ")
	if i < 0 {
		t.Fatal("no 16384-byte row in the vector")
	}
	cut := in[:i+1+strings.Index(in[i+1:], "\n")+1]
	r := Parse([]byte(cut))
	if r.OK || !strings.Contains(r.Error, "output cut off after the 16 KiB row") {
		t.Errorf("ok=%v error %q, want: output cut off after the 16 KiB row", r.OK, r.Error)
	}
	if len(r.PerftestBW) != 14 {
		t.Errorf("%d rows, want the 14 up to 16 KiB", len(r.PerftestBW))
	}
	// A --run_infinitely run prints rows of one size and no closing line:
	// that is how it ends, not a cut.
	if r := Parse(loadVector(t, "perftest_ib_write_bw_run_infinitely_rdmacm_roce_partial__perftest-pr-342.txt")); !r.OK {
		t.Errorf("run_infinitely: %q", r.Error)
	}
}

// The line rate is judged on large messages only (docs/bench.md): rows
// that all lie below --large-message-bytes skip the check, never pass it.
func TestLineRateNeedsLargeMessages(t *testing.T) {
	t.Parallel()
	small := Result{Tool: "ib_write_bw", Kind: KindPerftestBW, OK: true,
		PerftestBW: []PerftestBWRow{{Bytes: 8192, BWAvgGbps: 95}, {Bytes: 16384, BWAvgGbps: 96}}}
	large := small
	large.PerftestBW = append(large.PerftestBW, PerftestBWRow{Bytes: 65536, BWAvgGbps: 97})
	for _, tc := range []struct {
		r      Result
		status Status
		reason string
	}{
		{small, StatusSkip, "no row of at least 64 KiB"},
		{large, StatusPass, "97.00 Gb/s at 64 KiB"},
	} {
		var got *Verdict
		for _, v := range Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: tc.r}}, LineRateGbps: 100}) {
			if v.Check == CheckLineRate {
				got = &v
			}
		}
		if got == nil || got.Status != tc.status || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("rows up to %d B: line-rate %+v, want %s: %q", tc.r.PerftestBW[len(tc.r.PerftestBW)-1].Bytes, got, tc.status, tc.reason)
		}
	}
}

// perftest output followed by nccl-tests output in one log: the second
// suite's results are not dropped silently.
func TestTwoSuitesInOneLogAreAnError(t *testing.T) {
	t.Parallel()
	perf := loadVector(t, "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt")
	nccl := loadVector(t, "nccl-tests_all_reduce_perf_2node_16gpu_k8s_mpijob_ib_sriov__azure_aks-rdma-infiniband.txt")
	for name, in := range map[string][]byte{
		"perftest then nccl-tests": append(append([]byte{}, perf...), nccl...),
		"nccl-tests then perftest": append(append([]byte{}, nccl...), perf...),
	} {
		r := Parse(in)
		if r.OK || !strings.Contains(r.Error, "results too, which are not read") {
			t.Errorf("%s: %s ok=%v error %q, want an error naming the other suite", name, r.Tool, r.OK, r.Error)
		}
	}
}
