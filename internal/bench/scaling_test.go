package bench

import (
	"math"
	"testing"
)

// The vGPU + PVRDMA paper's Horovod ResNet-50 table (one vGPU per VM, 1 to
// 4 VMs): TCP 340/364/437/550 img/s, PVRDMA 340/533/781/1021 img/s; the
// paper's speed-ups at 4 nodes are 1.62x (TCP) and 3.00x (PVRDMA).
var paperTCP = []float64{340, 364, 437, 550}
var paperPVRDMA = []float64{340, 533, 781, 1021}

func paperResults() []Labelled {
	var out []Labelled
	for i := range paperTCP {
		for _, s := range []struct {
			name string
			v    float64
		}{{"tcp", paperTCP[i]}, {"rdma", paperPVRDMA[i]}} {
			out = append(out, Labelled{Scenario: s.name, Nodes: i + 1, Result: Result{
				Tool: ToolHorovod, Kind: KindTraining, OK: true,
				Info:    Info{GPUs: i + 1, Unit: "img/s"},
				Summary: map[string]float64{SumTotalThroughput: s.v},
			}})
		}
	}
	return out
}

func TestScalingTableReproducesPaper(t *testing.T) {
	rows, skipped := ScalingTable(ScalingPoints(paperResults(), 0))
	if len(rows) != 8 || len(skipped) != 0 {
		t.Fatalf("rows = %d, skipped = %v", len(rows), skipped)
	}
	want := map[string][]struct{ speedup, eff float64 }{
		"tcp":  {{1, 1}, {364.0 / 340, 364.0 / 680}, {437.0 / 340, 437.0 / 1020}, {550.0 / 340, 550.0 / 1360}},
		"rdma": {{1, 1}, {533.0 / 340, 533.0 / 680}, {781.0 / 340, 781.0 / 1020}, {1021.0 / 340, 1021.0 / 1360}},
	}
	// Scenarios in order of first appearance, each sorted by size.
	if rows[0].Scenario != "tcp" || rows[4].Scenario != "rdma" {
		t.Fatalf("order: %s, %s", rows[0].Scenario, rows[4].Scenario)
	}
	for i, r := range rows {
		w := want[r.Scenario][i%4]
		if r.Nodes != i%4+1 || r.GPUs != i%4+1 || r.By != "gpus" || r.Base != (i%4 == 0) ||
			!near(r.Speedup, w.speedup) || !near(r.Efficiency, w.eff) {
			t.Errorf("row %d = %+v, want speed-up %v efficiency %v", i, r, w.speedup, w.eff)
		}
	}
	// The paper's published speed-ups, to two decimals.
	if got := math.Round(rows[3].Speedup*100) / 100; got != 1.62 {
		t.Errorf("TCP speed-up at 4 nodes = %.2f, want 1.62", got)
	}
	if got := math.Round(rows[7].Speedup*100) / 100; got != 3.00 {
		t.Errorf("PVRDMA speed-up at 4 nodes = %.2f, want 3.00", got)
	}
}

func TestScalingVerdictsOnPaper(t *testing.T) {
	vs := Judge(JudgeInput{Results: paperResults()})
	count := map[string]int{}
	for _, v := range vs {
		count[v.Check+"/"+v.Scenario+"/"+string(v.Status)]++
	}
	// PVRDMA reaches 78%, 77% and 75% of linear: under 90%, flagged.
	// TCP (54%, 43%, 40%) is info. RDMA vs TCP: info at 1-3 nodes,
	// judged at 4 nodes: 1021/550 = 1.86x.
	want := map[string]int{
		"scaling-efficiency/rdma/fail": 3, "scaling-efficiency/tcp/info": 3,
		"rdma-vs-tcp/rdma/info": 3, "rdma-vs-tcp/rdma/pass": 1,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s: %d verdicts, want %d (all: %v)", k, count[k], n, count)
		}
	}
	if len(vs) != 10 {
		t.Errorf("%d verdicts, want 10", len(vs))
	}
	for _, v := range vs {
		if v.Check == CheckRDMAvsTCP && v.Status == StatusPass && !near(v.Measured, 1021.0/550) {
			t.Errorf("gain = %v", v.Measured)
		}
	}
	// A laxer threshold passes PVRDMA's scaling.
	lax := Judge(JudgeInput{Results: paperResults(), Thresholds: Thresholds{MinScalingEfficiency: 0.75, MinTrainingGain: 2}})
	for _, v := range lax {
		if v.Check == CheckScalingEfficiency && v.Scenario == "rdma" && v.Status != StatusPass {
			t.Errorf("at 75%%: %+v", v)
		}
		if v.Check == CheckRDMAvsTCP && v.Status == StatusFail && !near(v.Target, 2) {
			t.Errorf("gain verdict = %+v", v)
		}
	}
}

func TestScalingSizes(t *testing.T) {
	mk := func(sc string, nodes, gpus int, v float64) Labelled {
		return Labelled{Scenario: sc, Nodes: nodes, Result: Result{Tool: ToolTFCNN, Kind: KindTraining, OK: true,
			Info: Info{GPUs: gpus}, Summary: map[string]float64{SumTotalThroughput: v}}}
	}
	// No GPU count in the logs: --gpus-per-node sizes them.
	rows, _ := ScalingTable(ScalingPoints([]Labelled{mk("rdma", 2, 0, 3800), mk("rdma", 1, 0, 2000)}, 8))
	if len(rows) != 2 || rows[0].GPUs != 8 || rows[1].GPUs != 16 || rows[1].By != "gpus" || !near(rows[1].Efficiency, 0.95) {
		t.Errorf("gpus per node: %+v", rows)
	}
	// Neither: nodes are the size.
	rows, _ = ScalingTable(ScalingPoints([]Labelled{mk("rdma", 1, 0, 2000), mk("rdma", 4, 0, 7600)}, 0))
	if len(rows) != 2 || rows[1].By != "nodes" || !near(rows[1].Efficiency, 0.95) {
		t.Errorf("by nodes: %+v", rows)
	}
	// No size at all: skipped, and said so.
	vs := Judge(JudgeInput{Results: []Labelled{mk("rdma", 0, 0, 2000)}})
	if len(vs) != 1 || vs[0].Status != StatusSkip || vs[0].Check != CheckScalingEfficiency {
		t.Errorf("unsized: %+v", vs)
	}
	// A failed run is a run verdict, not a point.
	bad := mk("rdma", 2, 0, 1)
	bad.Result.OK, bad.Result.Error = false, "RuntimeError: CUDA out of memory"
	if pts := ScalingPoints([]Labelled{bad}, 8); len(pts) != 0 {
		t.Errorf("failed run became a point: %+v", pts)
	}
}
