package bench

import (
	"regexp"
	"strconv"
	"strings"
)

// Training logs covered (see docs/bench.md, "Training throughput"):
//
//   - Horovod's synthetic benchmarks (examples/*/pytorch_synthetic_benchmark.py,
//     tensorflow_synthetic_benchmark.py, tensorflow2_synthetic_benchmark.py,
//     mxnet): "Iter #N: X img/sec per GPU", "Img/sec per GPU: M +-S",
//     "Total img/sec on N GPU(s): T +-S", "Number of GPUs: N", "Model: M".
//   - tf_cnn_benchmarks: "N<TAB>images/sec: X +/- S (jitter = J)<TAB>loss"
//     step rows and "total images/sec: T" (every Horovod rank prints the
//     job's total; they are averaged).
//   - DeepSpeed's throughput timer: "epoch=E/micro_step=M/global_step=G,
//     RunningAvgSamplesPerSec=X, CurrSamplesPerSec=Y, ..." and the older
//     "E/S, SamplesPerSec=X" (both count the global batch: job throughput).
//   - Megatron-LM iteration lines: "iteration N/ M | ... | elapsed time per
//     iteration (ms): T | [throughput per GPU (TFLOP/s/GPU): F |] ... |
//     global batch size: B |": samples/s = B / (T/1000).
//
// The PyTorch ImageNet example prints batch times without the batch size,
// so it is not covered: its throughput cannot be read from the log.
var (
	hvdIter    = regexp.MustCompile(`^Iter #(\d+): (\S+) img/sec per (GPU|CPU)\b`)
	hvdPerGPU  = regexp.MustCompile(`^Img/sec per (GPU|CPU): (\S+) \+-(\S+)`)
	hvdTotal   = regexp.MustCompile(`^Total img/sec on (\d+) (GPU|CPU)\(s\): (\S+) \+-(\S+)`)
	hvdCount   = regexp.MustCompile(`^Number of (GPU|CPU)s: (\d+)`)
	modelLine  = regexp.MustCompile(`^Model:\s+(\S+)`)
	tfcnnStep  = regexp.MustCompile(`^(\d+)\s+images/sec: (\S+) \+/- (\S+) \(jitter = \S+\)`)
	tfcnnTotal = regexp.MustCompile(`^total images/sec: (\S+)`)
	tfcnnDevs  = regexp.MustCompile(`^Devices:\s+\[(.*)\]`)
	dsNew      = regexp.MustCompile(`\bepoch=\d+/micro_step=\d+/global_step=(\d+), RunningAvgSamplesPerSec=([^,\s]+), CurrSamplesPerSec=([^,\s]+)`)
	dsOld      = regexp.MustCompile(`\b\d+/(\d+), (?:RunningAvg)?SamplesPerSec=([^,\s]+)(?:, CurrSamplesPerSec=([^,\s]+))?`)
	megIter    = regexp.MustCompile(`\biteration\s+(\d+)\s*/\s*\d+\s*\|`)
	megElapsed = regexp.MustCompile(`\|\s*elapsed time per iteration \(ms\):\s*([^\s|]+)`)
	megBatch   = regexp.MustCompile(`\|\s*global batch size:\s*(\d+)`)
	megTFLOPs  = regexp.MustCompile(`\|\s*throughput per GPU \(TFLOP/s/GPU\):\s*([^\s|]+)`)
	pyError    = regexp.MustCompile(`^(?:[\w.]+\.)?\w*(?:Error|Exception): `)
)

// Training tools (Result.Tool).
const (
	ToolHorovod     = "horovod-synthetic-benchmark"
	ToolTFCNN       = "tf_cnn_benchmarks"
	ToolDeepSpeed   = "deepspeed"
	ToolMegatron    = "megatron-lm"
	ToolTrainNoName = "training"
)

// Scopes of a training throughput value.
const (
	ScopeGPU  = "gpu"  // one GPU (Horovod's per-GPU Iter lines)
	ScopeCPU  = "cpu"  // one CPU worker (Horovod's per-CPU Iter lines)
	ScopeRank = "rank" // one process (tf_cnn_benchmarks step rows)
	ScopeJob  = "job"  // the whole job (DeepSpeed, Megatron-LM)
)

// Training summary keys (the --json contract).
const (
	SumTotalThroughput       = "total_throughput"        // the job: every GPU together
	SumTotalThroughputStddev = "total_throughput_stddev" // as printed (Horovod's +-)
	SumThroughputPerGPU      = "throughput_per_gpu"
	SumThroughputPerGPUStdev = "throughput_per_gpu_stddev"
	SumThroughputPerCPU      = "throughput_per_cpu" // Horovod on CPU workers
	SumThroughputPerCPUStdev = "throughput_per_cpu_stddev"
	SumTFLOPsPerGPU          = "tflops_per_gpu" // Megatron-LM, mean over the rows
)

// TrainingRow is one step's throughput, in samples (images) per second,
// of the scope the tool prints it for.
type TrainingRow struct {
	Step       int64    `json:"step"`
	Throughput float64  `json:"throughput"`
	Scope      string   `json:"scope"`
	Stddev     *float64 `json:"stddev,omitempty"`
	TFLOPs     *float64 `json:"tflops_per_gpu,omitempty"`
}

// ParseTraining parses data as a training log.
func ParseTraining(data []byte) Result { return parseLines(data, parseTraining) }

func trainingMarker(t string) bool {
	switch {
	case strings.HasPrefix(t, "Iter #") && strings.Contains(t, "img/sec per"),
		strings.HasPrefix(t, "Img/sec per "), strings.HasPrefix(t, "Total img/sec on "),
		strings.HasPrefix(t, "total images/sec:"),
		strings.Contains(t, "images/sec:") && tfcnnStep.MatchString(t),
		strings.Contains(t, "SamplesPerSec="),
		strings.Contains(t, "elapsed time per iteration (ms)"):
		return true
	}
	return false
}

type trainingState struct {
	r                  Result
	perGPU, perGPUStd  *float64 // per CPU when cpu
	cpu                bool     // Horovod ran on CPU workers ("img/sec per CPU")
	total, totalStd    *float64
	tfTotals           []float64
	dsRunning          *float64
	tflops             []float64
	firstErr, traceErr string
}

func parseTraining(lines []line) Result {
	s := trainingState{r: Result{Kind: KindTraining, Info: Info{Unit: "samples/s"}}}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			continue
		}
		if !s.horovod(t, l.complete) && !s.tfcnn(t, l.complete) && !s.deepspeed(t, l.complete) && !s.megatron(t, l.complete) {
			s.errorLine(t)
		}
	}
	return s.finish()
}

func (s *trainingState) tool(name, unit string) {
	if s.r.Tool == "" {
		s.r.Tool, s.r.Info.Unit = name, unit
	}
}

func (s *trainingState) horovod(t string, complete bool) bool {
	if m := hvdIter.FindStringSubmatch(t); m != nil {
		s.tool(ToolHorovod, "img/s")
		step, ok1 := parseInt(m[1])
		v, ok2 := parseFloat(m[2])
		scope := ScopeGPU
		if m[3] == "CPU" {
			s.cpu, scope = true, ScopeCPU
		}
		if ok1 && ok2 && complete {
			s.r.Training = append(s.r.Training, TrainingRow{Step: step, Throughput: v, Scope: scope})
		}
		return true
	}
	if m := hvdPerGPU.FindStringSubmatch(t); m != nil {
		s.tool(ToolHorovod, "img/s")
		s.cpu = s.cpu || m[1] == "CPU"
		if v, ok := parseFloat(m[2]); ok {
			s.perGPU = &v
			if sd, ok := parseFloat(m[3]); ok {
				s.perGPUStd = &sd
			}
		}
		return true
	}
	if m := hvdTotal.FindStringSubmatch(t); m != nil {
		s.tool(ToolHorovod, "img/s")
		n, _ := strconv.Atoi(m[1])
		switch {
		case n <= 0 || n >= 1<<24:
		case m[2] == "CPU":
			s.cpu, s.r.Info.CPUs = true, n // CPU workers stay CPU: not GPUs
		default:
			s.r.Info.GPUs = n
		}
		if v, ok := parseFloat(m[3]); ok {
			s.total = &v
			if sd, ok := parseFloat(strings.TrimSpace(m[4])); ok {
				s.totalStd = &sd
			}
		}
		return true
	}
	if m := hvdCount.FindStringSubmatch(t); m != nil {
		n, err := strconv.Atoi(m[2])
		switch {
		case err != nil || n <= 0 || n >= 1<<24:
		case m[1] == "CPU":
			s.cpu = true
			if s.r.Info.CPUs == 0 {
				s.r.Info.CPUs = n
			}
		case s.r.Info.GPUs == 0:
			s.r.Info.GPUs = n
		}
		return true
	}
	if m := modelLine.FindStringSubmatch(t); m != nil {
		if s.r.Info.Model == "" {
			s.r.Info.Model = m[1]
		}
		return true
	}
	return false
}

func (s *trainingState) tfcnn(t string, complete bool) bool {
	if m := tfcnnStep.FindStringSubmatch(t); m != nil {
		s.tool(ToolTFCNN, "img/s")
		step, ok1 := parseInt(m[1])
		v, ok2 := parseFloat(m[2])
		if ok1 && ok2 && complete {
			row := TrainingRow{Step: step, Throughput: v, Scope: ScopeRank}
			if sd, ok := parseFloat(m[3]); ok {
				row.Stddev = &sd
			}
			s.r.Training = append(s.r.Training, row)
		}
		return true
	}
	if m := tfcnnTotal.FindStringSubmatch(t); m != nil {
		s.tool(ToolTFCNN, "img/s")
		if v, ok := parseFloat(m[1]); ok && complete {
			s.tfTotals = append(s.tfTotals, v)
		}
		return true
	}
	if m := tfcnnDevs.FindStringSubmatch(t); m != nil {
		if n := strings.Count(m[1], "gpu:"); n > 0 && s.r.Info.GPUs == 0 {
			s.r.Info.GPUs = n
		}
		return true
	}
	return false
}

func (s *trainingState) deepspeed(t string, complete bool) bool {
	if !strings.Contains(t, "SamplesPerSec=") {
		return false
	}
	m := dsNew.FindStringSubmatch(t)
	if m == nil {
		m = dsOld.FindStringSubmatch(t)
	}
	if m == nil {
		return false
	}
	s.tool(ToolDeepSpeed, "samples/s")
	step, ok1 := parseInt(m[1])
	running, ok2 := parseFloat(m[2])
	if !ok1 || !ok2 || !complete {
		return true
	}
	s.dsRunning = &running
	v := running
	if m[3] != "" { // the step's own throughput when printed
		if cur, ok := parseFloat(m[3]); ok {
			v = cur
		}
	}
	s.r.Training = append(s.r.Training, TrainingRow{Step: step, Throughput: v, Scope: ScopeJob})
	return true
}

func (s *trainingState) megatron(t string, complete bool) bool {
	if !strings.Contains(t, "elapsed time per iteration (ms)") {
		return false
	}
	it, el, gb := megIter.FindStringSubmatch(t), megElapsed.FindStringSubmatch(t), megBatch.FindStringSubmatch(t)
	if it == nil || el == nil {
		return false
	}
	s.tool(ToolMegatron, "samples/s")
	step, ok1 := parseInt(it[1])
	ms, ok2 := parseFloat(el[1])
	if !ok1 || !ok2 || gb == nil || !complete || !(ms > 0) {
		return true
	}
	batch, ok := parseFloat(gb[1])
	if !ok {
		return true
	}
	row := TrainingRow{Step: step, Throughput: round(batch / (ms / 1000)), Scope: ScopeJob}
	if f := megTFLOPs.FindStringSubmatch(t); f != nil {
		if v, ok := parseFloat(f[1]); ok {
			row.TFLOPs = &v
			s.tflops = append(s.tflops, v)
		}
	}
	s.r.Training = append(s.r.Training, row)
	return true
}

// errorLine records the first failure: a Python exception line (the line
// after a traceback says what went wrong), CUDA out of memory, an NCCL
// error, an MPI abort.
func (s *trainingState) errorLine(t string) {
	switch {
	case s.firstErr == "" && pyError.MatchString(t) && !strings.HasPrefix(t, "DeprecationWarning"):
		s.firstErr = t
	case s.firstErr == "" && (strings.Contains(t, "CUDA out of memory") || strings.Contains(t, "NCCL error") ||
		strings.Contains(t, "ncclSystemError") || strings.Contains(t, "ncclInternalError") || launcherError(t)):
		s.firstErr = t
	case s.traceErr == "" && strings.HasPrefix(t, "Traceback (most recent call last)"):
		s.traceErr = t
	}
}

func (s *trainingState) finish() Result {
	r := s.r
	if r.Tool == "" {
		r.Tool = ToolTrainNoName
	}
	sum := map[string]float64{}
	gpus := float64(r.Info.GPUs)
	switch r.Tool {
	case ToolHorovod:
		if s.perGPU == nil {
			if m, ok := meanThroughput(r.Training, 0); ok {
				s.perGPU = &m
			}
		}
		per, perStd, workers := SumThroughputPerGPU, SumThroughputPerGPUStdev, gpus
		if s.cpu {
			per, perStd, workers = SumThroughputPerCPU, SumThroughputPerCPUStdev, float64(r.Info.CPUs)
		}
		if s.perGPU != nil {
			sum[per] = *s.perGPU
			if s.perGPUStd != nil {
				sum[perStd] = *s.perGPUStd
			}
		}
		switch {
		case s.total != nil:
			sum[SumTotalThroughput] = *s.total
			if s.totalStd != nil {
				sum[SumTotalThroughputStddev] = *s.totalStd
			}
		case s.perGPU != nil && workers > 0:
			sum[SumTotalThroughput] = round(*s.perGPU * workers)
		}
	case ToolTFCNN:
		if len(s.tfTotals) > 0 {
			var t float64
			for _, v := range s.tfTotals {
				t += v
			}
			sum[SumTotalThroughput] = round(t / float64(len(s.tfTotals)))
		}
	case ToolDeepSpeed:
		if s.dsRunning != nil {
			sum[SumTotalThroughput] = *s.dsRunning
		}
	case ToolMegatron:
		skip := 0
		if len(r.Training) >= 3 {
			skip = 1 // the first logged iteration includes start-up
		}
		if m, ok := meanThroughput(r.Training, skip); ok {
			sum[SumTotalThroughput] = m
		}
		if len(s.tflops) > 0 {
			var t float64
			for _, v := range s.tflops[min(skip, len(s.tflops)-1):] {
				t += v
			}
			sum[SumTFLOPsPerGPU] = round(t / float64(len(s.tflops)-min(skip, len(s.tflops)-1)))
		}
	}
	if tot, ok := sum[SumTotalThroughput]; ok && gpus > 0 {
		if _, ok := sum[SumThroughputPerGPU]; !ok {
			sum[SumThroughputPerGPU] = round(tot / gpus)
		}
	}
	r.Summary = sum
	r.Error = firstNonEmpty(s.firstErr, s.traceErr)
	if r.Error == "" && len(r.Training) == 0 && len(sum) == 0 {
		r.Error = "no throughput lines found (output truncated or run did not finish)"
	}
	r.OK = r.Error == ""
	return r
}

func meanThroughput(rows []TrainingRow, skip int) (float64, bool) {
	if len(rows) <= skip {
		return 0, false
	}
	var t float64
	for _, row := range rows[skip:] {
		t += row.Throughput
	}
	return round(t / float64(len(rows)-skip)), true
}

// TrainingThroughput returns a training result's job throughput (every GPU
// together) and the GPU count the log states (0 when it does not).
func TrainingThroughput(r Result) (total float64, gpus int, ok bool) {
	if r.Kind != KindTraining {
		return 0, 0, false
	}
	total, ok = r.Summary[SumTotalThroughput]
	return total, r.Info.GPUs, ok
}
