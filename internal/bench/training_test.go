package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// allVectorWants is every saved output's expectation: the benchmark
// vectors and the training logs.
func allVectorWants() map[string]vectorWant {
	all := maps.Clone(vectorWants)
	maps.Copy(all, trainingVectorWants)
	maps.Copy(all, jsonVectorWants)
	return all
}

var trainingVectorWants = map[string]vectorWant{
	"horovod_pytorch_synthetic_benchmark_resnet50_4gpu__horovod-issue-712.txt": {
		tool: ToolHorovod, kind: KindTraining, ok: true, rows: 10,
		summary: map[string]float64{SumTotalThroughput: 432.8, SumTotalThroughputStddev: 4.9,
			SumThroughputPerGPU: 108.2, SumThroughputPerGPUStdev: 1.2},
		info: Info{GPUs: 4, Model: "resnet50", Unit: "img/s"},
		check: func(t *testing.T, r Result) {
			first, last := r.Training[0], r.Training[9]
			if first.Step != 0 || !near(first.Throughput, 108.3) || first.Scope != ScopeGPU ||
				last.Step != 9 || !near(last.Throughput, 108.3) || !near(r.Training[2].Throughput, 109.3) {
				t.Errorf("rows = %+v ... %+v", first, last)
			}
		},
	},
	"tf_cnn_benchmarks_resnet101_1gpu_horovod__horovod-issue-466.txt": {
		tool: ToolTFCNN, kind: KindTraining, ok: true, rows: 11,
		summary: map[string]float64{SumTotalThroughput: 204.75},
		info:    Info{Unit: "img/s"},
		check: func(t *testing.T, r Result) {
			row := r.Training[1]
			if row.Step != 10 || !near(row.Throughput, 204.8) || row.Scope != ScopeRank {
				t.Errorf("row = %+v", row)
			}
			f64(t, "stddev", row.Stddev, 0.1)
		},
	},
	"tf_cnn_benchmarks_resnet50_1gpu_no_horovod__tensorflow-benchmarks-pr-63.txt": {
		tool: ToolTFCNN, kind: KindTraining, ok: true, rows: 11,
		summary: map[string]float64{SumTotalThroughput: 138.95},
		info:    Info{Unit: "img/s"},
		check: func(t *testing.T, r Result) {
			if last := r.Training[10]; last.Step != 100 || !near(last.Throughput, 139.2) {
				t.Errorf("last row = %+v", last)
			}
		},
	},
	"deepspeed_timer_SamplesPerSec_old_format_partial__deepspeed-issue-1825.txt": {
		tool: ToolDeepSpeed, kind: KindTraining, ok: true, rows: 2,
		summary: map[string]float64{SumTotalThroughput: 83.73838805358588},
		info:    Info{Unit: "samples/s"},
		check: func(t *testing.T, r Result) {
			if r.Training[0].Step != 40 || !near(r.Training[0].Throughput, 83.48609168106144) || r.Training[0].Scope != ScopeJob {
				t.Errorf("first row = %+v", r.Training[0])
			}
		},
	},
	"SYNTHETIC_deepspeed_timer_RunningAvgSamplesPerSec_torchrun_prefix__from_format_strings.txt": {
		tool: ToolDeepSpeed, kind: KindTraining, ok: true, rows: 3,
		// The running average of the last report is the job's throughput;
		// each row is that step's own (CurrSamplesPerSec).
		summary: map[string]float64{SumTotalThroughput: 251.9},
		info:    Info{Unit: "samples/s"},
		check: func(t *testing.T, r Result) {
			if r.Training[2].Step != 30 || !near(r.Training[2].Throughput, 252.6) {
				t.Errorf("last row = %+v", r.Training[2])
			}
		},
	},
	"megatron-lm_mixtral_16xH100_iterations_partial__megatron-lm-issue-756.txt": {
		tool: ToolMegatron, kind: KindTraining, ok: true, rows: 3,
		// 128 samples / 5.3616 s = 23.8735; the first logged iteration is
		// left out of the mean: (23.3973 + 21.9558) / 2.
		summary: map[string]float64{SumTotalThroughput: 22.67657557, SumTFLOPsPerGPU: 231.35},
		info:    Info{Unit: "samples/s"},
		check: func(t *testing.T, r Result) {
			row := r.Training[0]
			if row.Step != 71 || !near(row.Throughput, 23.873470606) || row.Scope != ScopeJob {
				t.Errorf("row = %+v", row)
			}
			f64(t, "tflops", row.TFLOPs, 243.6)
		},
	},
}

func TestTrainingLauncherPrefixes(t *testing.T) {
	body := "Number of GPUs: 8\nIter #0: 300.5 img/sec per GPU\nIter #1: 301.5 img/sec per GPU\n"
	for name, prefix := range map[string]string{
		"open mpi --tag-output": "[1,0]<stdout>:",
		"kubectl logs --prefix": "[pod/railyard-bench-hvd-rdma-launcher-x7k2p/launcher] ",
		"slurm srun -l":         "0: ",
		"torchrun --tee":        "[default0]:",
	} {
		var b strings.Builder
		for _, l := range strings.SplitAfter(body, "\n") {
			if l != "" {
				b.WriteString(prefix + l)
			}
		}
		r := Parse([]byte(b.String()))
		if r.Tool != ToolHorovod || !r.OK || len(r.Training) != 2 || r.Info.GPUs != 8 {
			t.Errorf("%s: %+v", name, r)
			continue
		}
		// Without the summary lines: mean of the Iter rows, x GPUs.
		if !near(r.Summary[SumThroughputPerGPU], 301) || !near(r.Summary[SumTotalThroughput], 2408) {
			t.Errorf("%s: summary = %v", name, r.Summary)
		}
	}
}

func TestTrainingFailures(t *testing.T) {
	for name, tc := range map[string]struct{ in, err string }{
		"oom after a traceback": {"Iter #0: 100.0 img/sec per GPU\nTraceback (most recent call last):\n  File \"b.py\", line 3, in <module>\n" +
			"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n", "RuntimeError: CUDA out of memory"},
		"traceback only": {"Iter #0: 100.0 img/sec per GPU\nTraceback (most recent call last):\n", "Traceback"},
		"mpi abort":      {"Model: resnet50\nIter #0: 100.0 img/sec per GPU\nmpirun noticed that process rank 1 with PID 0 on node b exited on signal 9 (Killed).\n", "mpirun noticed"},
		"nothing":        {"Model: resnet50\nNumber of GPUs: 4\nRunning warmup...\nIter #0: 1 img/sec per GPU", "no throughput lines"},
	} {
		r := ParseTraining([]byte(tc.in))
		if r.OK || !strings.Contains(r.Error, tc.err) {
			t.Errorf("%s: ok=%v error=%q, want %q", name, r.OK, r.Error, tc.err)
		}
	}
}

// A cut-off last line is no measurement; NCCL warnings in a training log do
// not make it an nccl-tests output.
func TestTrainingDetectionAndCutLine(t *testing.T) {
	in := "NCCL WARN Call to ibv_reg_mr failed\nNCCL WARN x\nIter #0: 100.0 img/sec per GPU\nIter #1: 99"
	r := Parse([]byte(in))
	if r.Kind != KindTraining || len(r.Training) != 1 {
		t.Errorf("got %+v", r)
	}
	if _, ok := r.Summary[SumTotalThroughput]; ok {
		t.Error("total invented without a GPU count")
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil || back.Kind != KindTraining || len(back.Training) != 1 {
		t.Errorf("round trip: %v %+v", err, back)
	}
	if !strings.Contains(string(data), `"throughput":100`) {
		t.Errorf("json = %s", data)
	}
}

func FuzzParseTraining(f *testing.F) {
	addVectorSeeds(f)
	f.Add([]byte("iteration 1/ 2 | elapsed time per iteration (ms): 0 | global batch size: 9 |\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkInvariants(t, ParseTraining(data)) })
}

// 100,000 Horovod Iter lines behind kubectl logs --prefix.
func BenchmarkParseTrainingLarge(b *testing.B) {
	var buf strings.Builder
	buf.WriteString("[pod/hvd-launcher/launcher] Number of GPUs: 32\n")
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&buf, "[pod/hvd-launcher/launcher] Iter #%d: %.1f img/sec per GPU\n", i, 300+float64(i%7))
	}
	benchParse(b, []byte(buf.String()), func(r Result) int { return len(r.Training) }, 100000)
}
