package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hvdCPULog is Horovod's synthetic benchmark on CPU workers: its totals
// are per CPU, and 32 CPUs are not 32 GPUs.
const hvdCPULog = `Model: resnet50
Batch size: 32
Number of CPUs: 32
Running warmup...
Iter #0: 4.1 img/sec per CPU
Iter #1: 4.3 img/sec per CPU
Img/sec per CPU: 4.2 +-0.2
Total img/sec on 32 CPU(s): 134.4 +-6.4
`

func TestHorovodCPUWorkersStayCPU(t *testing.T) {
	t.Parallel()
	r := Parse([]byte(hvdCPULog))
	if !r.OK || r.Tool != ToolHorovod {
		t.Fatalf("parsed %+v", r)
	}
	if d := cmp.Diff(Info{GPUs: 0, CPUs: 32, Model: "resnet50", Unit: "img/s"}, r.Info); d != "" {
		t.Errorf("info (-want +got):\n%s", d)
	}
	want := map[string]float64{SumThroughputPerCPU: 4.2, SumThroughputPerCPUStdev: 0.2, SumTotalThroughput: 134.4, SumTotalThroughputStddev: 6.4}
	if d := cmp.Diff(want, r.Summary); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}
	if r.Training[0].Scope != ScopeCPU {
		t.Errorf("row scope %q", r.Training[0].Scope)
	}
	// --gpus-per-node does not turn the CPU run into GPUs either.
	if p := ScalingPoints([]Labelled{{Scenario: "rdma", Nodes: 4, Result: r}}, 8); len(p) != 1 || p[0].GPUs != 0 {
		t.Errorf("scaling points %+v", p)
	}
}

const hvdGPULog = `Model: resnet50
Number of GPUs: 8
Img/sec per GPU: %s +-3.0
Total img/sec on 8 GPU(s): 1960.0 +-24.0
`

func TestTrainingBaseline(t *testing.T) {
	t.Parallel()
	gpu := func(per string) Result { return Parse([]byte(strings.Replace(hvdGPULog, "%s", per, 1))) }
	base := gpu("250.0")
	base.Source = "last-week.log"
	for _, tc := range []struct {
		name     string
		run      Result
		baseline *Result
		status   Status
		reason   string
	}{
		{"no baseline", gpu("245.0"), nil, StatusInfo, "per-GPU 245 img/s (resnet50); give --baseline"},
		{"within 5%", gpu("245.0"), &base, StatusPass, "per-GPU 245 img/s (resnet50) vs the baseline's 250 img/s (last-week.log): 98.0%; pass at 95%"},
		{"slower", gpu("200.0"), &base, StatusFail, "80.0%; pass at 95%"},
		{"CPU against GPU", Parse([]byte(hvdCPULog)), &base, StatusSkip, "the baseline ran on GPUs"},
		{"another model", Parse([]byte(strings.Replace(strings.Replace(hvdGPULog, "%s", "245.0", 1), "resnet50", "vgg16", 1))), &base, StatusSkip, "not the same model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := findVerdict(t, Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: tc.run}}, Baseline: tc.baseline}), CheckTrainingBaseline, "rdma")
			if v.Status != tc.status || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict %+v, want %s with %q", v, tc.status, tc.reason)
			}
		})
	}
}
