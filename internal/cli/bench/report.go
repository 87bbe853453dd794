package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchreport"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/topo"
	"github.com/railyard-io/railyard/internal/topology"
)

// Bounds of the numeric flags: far above any real value, finite.
const (
	maxLineRateGbps = 1e6 // as sysfs.ParseRate accepts
	maxSpeedup      = 1e6
	maxNICs         = 1024
	maxGPUsPerNode  = 1024
	maxNodes        = 1 << 20
)

type reportFlags struct {
	opts        bench.Options
	results     []string
	gpusPerNode int
	lineRate    float64
	source      topo.Source
	device      string
	nics        int
	out         string
	title       string
	th          bench.Thresholds
	roles       bench.Roles
	gdrClasses  []string
	profile     string
	baseline    string
	// changed says whether the user set a flag: a threshold flag set
	// overrides the profile's mark.
	changed func(name string) bool
}

// profileFlags are the threshold flags a profile sets, with their field.
var profileFlags = []struct {
	name  string
	field func(*bench.Thresholds) *float64
}{
	{"pass-line-rate", func(t *bench.Thresholds) *float64 { return &t.LineRateFraction }},
	{"pass-nccl", func(t *bench.Thresholds) *float64 { return &t.NCCLFraction }},
	{"min-scaling-efficiency", func(t *bench.Thresholds) *float64 { return &t.MinScalingEfficiency }},
	{"max-latency-factor", func(t *bench.Thresholds) *float64 { return &t.MaxLatencyFactor }},
}

func newReportCommand(s iostreams.Streams) *cobra.Command {
	f := reportFlags{th: bench.DefaultThresholds(), roles: bench.DefaultRoles()}
	cmd := &cobra.Command{
		Use:   "report --result SCENARIO[@NODES]=FILE... [--line-rate-gbps N | --machine NAME | --sysfs DIR]",
		Short: "Judge labelled benchmark results and write an HTML report with charts",
		Long: `report reads benchmark results, each labelled with a scenario
(--result rdma=bw.txt --result tcp=bw-tcp.txt --result pod=... --result bare-metal=...),
as raw tool outputs or as bench parse --json output, and:

  - judges perftest large-message bandwidth against the line rate
    (RoCE at MTU 1024 cannot exceed about 92.6%; bidirectional runs count x2),
  - compares the pod scenario with bare metal (within a tolerance),
  - computes the speed-up of the rdma scenario over tcp,
  - judges OSU osu_bw/osu_bibw peak bandwidth against the line rate and
    osu_latency against the fabric's expected small-message latency,
  - judges the GPUDirect pair (scenarios gpudirect-near and gpudirect-far,
    from bench plan --tests gpudirect) as a ratio, with the NICs' classes
    from --gpudirect-classes NEAR,FAR; the near run's line rate passes at
    --pass-gpudirect-line-rate (GPU memory crosses PCIe peer to peer),
  - judges nccl-tests peak bus bandwidth against NICs x line rate (on 2
    nodes tree algorithms can exceed it: rerun with NCCL_ALGO=Ring),
  - builds the training scaling table from training logs (Horovod,
    tf_cnn_benchmarks, DeepSpeed, Megatron-LM) labelled with their node
    count, --result rdma@4=train-rdma-4.log: speed-up and efficiency against
    linear per scenario, runs under --min-scaling-efficiency flagged, and
    RDMA's gain over TCP at the largest size both ran,
  - judges a training run's per-GPU throughput against --baseline, a
    previous run of the same model (Horovod on CPU workers counts CPUs),
  - judges the NCCL_DEBUG=INFO lines of any result: a fallback to TCP
    sockets fails where the profile (infiniband, roce-*) or the rdma
    scenario expects RDMA; an HCA without GPUDirect RDMA fails when the
    topology (--sysfs/--machine) puts a GPU near it, else warns; hosts of
    one job that differ (GDRDMA, HCAs, RoCE GID index, MTU) warn,

prints the verdicts, and writes report.html, report.json and PNG/SVG charts
into --out. The line rate is --line-rate-gbps, or read from a topology
(--sysfs DIR or --machine NAME; --device picks one NIC). It exits non-zero
when a check fails.`,
		Example: `  railyard bench report --result rdma=bw.txt --result tcp=iperf3.json --line-rate-gbps 100
  railyard bench report --result pod=bw-pod.txt --result bare-metal=bw-host.txt --sysfs /sys --device mlx5_0
  railyard bench report --result rdma=osu_bw.txt --result rdma=osu_latency.txt --line-rate-gbps 100 --profile infiniband
  railyard bench report --result gpudirect-near=near.txt --result gpudirect-far=far.txt \
    --line-rate-gbps 100 --gpudirect-classes PIX,PHB
  railyard bench report --result rdma@1=train-1.log --result rdma@2=train-2.log --result rdma@4=train-4.log \
    --gpus-per-node 8 --profile virtual
  railyard bench report --result rdma=train.log --baseline train-last-week.log
  railyard bench report --result rdma=nccl.txt --machine dgx1-v100 --nics 2   # a DGX-1 cabled with 2 NICs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := f.input(cmd, s)
			if err != nil {
				return err
			}
			if n, err := writeReport(s, f.out, in); err != nil || n > 0 {
				return errors.Join(err, failedChecks(n))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&f.results, "result", nil, "SCENARIO=FILE or SCENARIO@NODES=FILE: a result under a scenario name, with the node count of a training run (repeatable)")
	f.addFlags(cmd)
	return cmd
}

// failedChecks is the error of a report with failed checks (nil for none).
func failedChecks(n int) error {
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d check(s) failed", n)
}

// writeReport prints the scaling table and the verdicts, writes the report
// directory and returns how many checks failed: what bench report and
// bench run both do with judged results.
func writeReport(s iostreams.Streams, out string, in benchreport.Input) (int, error) {
	if rows := benchreport.Scaling(in); len(rows) > 0 {
		if err := benchreport.PrintScaling(s.Out, rows); err != nil {
			return 0, err
		}
		fmt.Fprintln(s.Out)
	}
	if in.Profile != "" {
		fmt.Fprintf(s.Out, "profile: %s (%s)\n", in.Profile, in.ProfileSource)
	} else {
		fmt.Fprintln(s.Out, "profile: none, the default pass marks (--profile "+strings.Join(bench.ProfileNames(), " | ")+")")
	}
	if err := benchreport.PrintVerdicts(s.Out, in.Verdicts); err != nil {
		return 0, err
	}
	files, err := benchreport.Write(out, in)
	if err != nil {
		return 0, err
	}
	for _, file := range files {
		if strings.HasSuffix(file, ".html") {
			fmt.Fprintf(s.Out, "\nreport: %s (%d files)\n", file, len(files))
		}
	}
	return countFailed(in.Verdicts), nil
}

// addFlags adds the flags that judge results and write the report
// (everything but the results themselves), shared by report and run.
func (f *reportFlags) addFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.opts.PerftestJSONGbits, "perftest-json-gbits", false, "perftest --out_json files come from runs with --report_gbits (default MiB/s)")
	fl.IntVar(&f.gpusPerNode, "gpus-per-node", 0, "GPUs per node of training runs whose log does not state its GPU count")
	fl.Float64Var(&f.th.MinScalingEfficiency, "min-scaling-efficiency", f.th.MinScalingEfficiency, "training runs pass at this fraction of linear scaling")
	fl.Float64Var(&f.th.MinTrainingGain, "min-training-gain", f.th.MinTrainingGain, "RDMA training throughput must beat TCP's by this factor")
	fl.Float64Var(&f.lineRate, "line-rate-gbps", 0, "line rate of one NIC port in Gb/s")
	f.source.AddFlags(cmd)
	fl.StringVar(&f.device, "device", "", "with --sysfs/--machine: take the line rate of this RDMA device (mlx5_0)")
	fl.IntVar(&f.nics, "nics", 0, "NICs per node used by nccl-tests (default: from the topology's GPU rails)")
	fl.StringVar(&f.out, "out", "report", "directory to write the report into")
	fl.StringVar(&f.title, "title", "", "report title")
	fl.Float64Var(&f.th.LineRateFraction, "pass-line-rate", f.th.LineRateFraction, "perftest passes at this fraction of the line rate")
	fl.Float64Var(&f.th.GPUDirectLineRateFraction, "pass-gpudirect-line-rate", f.th.GPUDirectLineRateFraction,
		"the gpudirect-near run (GPU memory) passes at this fraction of the line rate, or at --pass-line-rate when lower")
	fl.Float64Var(&f.th.PodTolerance, "pod-tolerance", f.th.PodTolerance, "a pod may be this fraction worse than bare metal")
	fl.Float64Var(&f.th.MinSpeedup, "min-speedup", f.th.MinSpeedup, "RDMA must be this many times better than TCP")
	fl.Float64Var(&f.th.NCCLFraction, "pass-nccl", f.th.NCCLFraction, "nccl-tests passes at this fraction of NICs x line rate")
	fl.Int64Var(&f.th.LargeMessageBytes, "large-message-bytes", f.th.LargeMessageBytes, "perftest rows from this size on count as large messages")
	fl.StringVar(&f.roles.Pod, "pod-scenario", f.roles.Pod, "scenario compared with bare metal")
	fl.StringVar(&f.roles.BareMetal, "bare-metal-scenario", f.roles.BareMetal, "bare-metal reference scenario")
	fl.StringVar(&f.roles.RDMA, "rdma-scenario", f.roles.RDMA, "scenario compared with TCP")
	fl.StringVar(&f.roles.TCP, "tcp-scenario", f.roles.TCP, "TCP reference scenario")
	fl.StringVar(&f.profile, "profile", "", "pass marks of a fabric: "+strings.Join(bench.ProfileNames(), " | ")+" (default from the topology's or the results' link layer)")
	fl.Float64Var(&f.th.MaxLatencyFactor, "max-latency-factor", f.th.MaxLatencyFactor, "osu_latency passes up to this many times the fabric's expected small-message latency")
	f.changed = fl.Changed
	fl.StringVar(&f.baseline, "baseline", "", "a previous training run of the same model (log or bench parse --json): every training run's per-GPU throughput is judged against it")
	fl.Float64Var(&f.th.BaselineTolerance, "baseline-tolerance", f.th.BaselineTolerance, "a training run may be this fraction below the baseline's per-GPU throughput")
	fl.StringSliceVar(&f.gdrClasses, "gpudirect-classes", nil, "NEAR,FAR: the classes of the gpudirect-near and gpudirect-far NICs to their GPU (bench plan prints them), e.g. PIX,PHB")
}

func countFailed(vs []bench.Verdict) int {
	n := 0
	for _, v := range vs {
		if v.Status == bench.StatusFail {
			n++
		}
	}
	return n
}

func (f *reportFlags) input(cmd *cobra.Command, s iostreams.Streams) (benchreport.Input, error) {
	if len(f.results) == 0 {
		return benchreport.Input{}, errors.New("give at least one --result SCENARIO=FILE")
	}
	errs := f.validate()
	var results []bench.Labelled
	for _, spec := range f.results {
		scenario, nodes, path, err := parseResultSpec(spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cmd.Context().Err(); err != nil {
			return benchreport.Input{}, err
		}
		r, err := loadResult(cmd.Context(), path, s.In, f.opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("--result %s: %w", scenario, err))
			continue
		}
		results = append(results, bench.Labelled{Scenario: scenario, Result: r, Nodes: nodes})
	}
	if err := errors.Join(errs...); err != nil {
		return benchreport.Input{}, err
	}
	return f.judge(cmd.Context(), results)
}

// validate checks the judging flags; it returns every problem.
func (f *reportFlags) validate() []error {
	var errs []error
	// Each test is written so that NaN fails it.
	if !(f.th.LineRateFraction > 0 && f.th.LineRateFraction <= 1) {
		errs = append(errs, fmt.Errorf("--pass-line-rate %g: want a fraction in (0, 1]", f.th.LineRateFraction))
	}
	if !(f.th.GPUDirectLineRateFraction > 0 && f.th.GPUDirectLineRateFraction <= 1) {
		errs = append(errs, fmt.Errorf("--pass-gpudirect-line-rate %g: want a fraction in (0, 1]", f.th.GPUDirectLineRateFraction))
	}
	if !(f.th.NCCLFraction > 0 && f.th.NCCLFraction <= 1) {
		errs = append(errs, fmt.Errorf("--pass-nccl %g: want a fraction in (0, 1]", f.th.NCCLFraction))
	}
	if !(f.th.PodTolerance >= 0 && f.th.PodTolerance < 1) {
		errs = append(errs, fmt.Errorf("--pod-tolerance %g: want a fraction in [0, 1)", f.th.PodTolerance))
	}
	if !(f.th.MinSpeedup > 0 && f.th.MinSpeedup <= maxSpeedup) {
		errs = append(errs, fmt.Errorf("--min-speedup %g: want a number in (0, %g]", f.th.MinSpeedup, float64(maxSpeedup)))
	}
	if f.th.LargeMessageBytes <= 0 {
		errs = append(errs, fmt.Errorf("--large-message-bytes %d: want > 0", f.th.LargeMessageBytes))
	}
	if !(f.lineRate >= 0 && f.lineRate <= maxLineRateGbps) {
		errs = append(errs, fmt.Errorf("--line-rate-gbps %g: want 0 (unknown) to %g", f.lineRate, float64(maxLineRateGbps)))
	}
	if !(f.th.MinScalingEfficiency > 0 && f.th.MinScalingEfficiency <= 1) {
		errs = append(errs, fmt.Errorf("--min-scaling-efficiency %g: want a fraction in (0, 1]", f.th.MinScalingEfficiency))
	}
	if !(f.th.MinTrainingGain > 0 && f.th.MinTrainingGain <= maxSpeedup) {
		errs = append(errs, fmt.Errorf("--min-training-gain %g: want a number in (0, %g]", f.th.MinTrainingGain, float64(maxSpeedup)))
	}
	if f.gpusPerNode < 0 || f.gpusPerNode > maxGPUsPerNode {
		errs = append(errs, fmt.Errorf("--gpus-per-node %d: want 0 (from the logs) to %d", f.gpusPerNode, maxGPUsPerNode))
	}
	if f.nics < 0 || f.nics > maxNICs {
		errs = append(errs, fmt.Errorf("--nics %d: want 0 (from the topology) to %d", f.nics, maxNICs))
	}
	fromTopology := f.source.Sysfs != "" || f.source.Machine != ""
	if fromTopology && f.lineRate > 0 {
		errs = append(errs, errors.New("--line-rate-gbps and --sysfs/--machine are mutually exclusive"))
	}
	if f.profile != "" {
		if _, err := bench.ProfileNamed(f.profile); err != nil {
			errs = append(errs, fmt.Errorf("--profile: %w", err))
		}
	}
	if !(f.th.MaxLatencyFactor >= 1 && f.th.MaxLatencyFactor <= maxSpeedup) {
		errs = append(errs, fmt.Errorf("--max-latency-factor %g: want a number in [1, %g]", f.th.MaxLatencyFactor, float64(maxSpeedup)))
	}
	if !(f.th.BaselineTolerance > 0 && f.th.BaselineTolerance < 1) {
		errs = append(errs, fmt.Errorf("--baseline-tolerance %g: want a fraction in (0, 1)", f.th.BaselineTolerance))
	}
	if f.baseline == "-" {
		errs = append(errs, errors.New("--baseline -: name a file (standard input is for --result)"))
	}
	if len(f.gdrClasses) > 0 {
		if _, err := gpudirectClasses(f.gdrClasses); err != nil {
			errs = append(errs, err)
		}
	}
	if f.device != "" && !fromTopology {
		errs = append(errs, errors.New("--device needs --sysfs or --machine"))
	}
	return errs
}

// judge takes the line rate (from the flag or a topology) and judges the
// results: the one path from results to verdicts of report and run.
func (f *reportFlags) judge(ctx context.Context, results []bench.Labelled) (benchreport.Input, error) {
	in := benchreport.Input{Title: f.title, Results: results, LineRateGbps: f.lineRate, NICs: f.nics, Thresholds: f.th, GPUsPerNode: f.gpusPerNode}
	if f.lineRate > 0 {
		in.LineRateSource = "--line-rate-gbps"
	}
	linkType := ""
	var near map[string]bool
	if f.source.Sysfs != "" || f.source.Machine != "" {
		t, desc, err := f.source.Load(ctx)
		if err != nil {
			return in, fmt.Errorf("line rate: %w", err)
		}
		lr, err := t.LineRate(f.device)
		if err != nil {
			return in, fmt.Errorf("line rate from %s: %w", desc, err)
		}
		in.LineRateGbps = lr.Gbps
		in.LineRateSource = desc + ": " + lr.Description
		if in.NICs == 0 {
			in.NICs = lr.NICs
		}
		linkType = railLinkLayer(t)
		near = nearHCAs(t)
	}
	p, ok, how := f.chooseProfile(linkType, results)
	if ok {
		in.Profile, in.ProfileSource = p.Name, how
		for _, pf := range profileFlags {
			if v := *pf.field(&p.Thresholds); v > 0 && !f.changed(pf.name) {
				*pf.field(&in.Thresholds) = v
			}
		}
	}
	if linkType == "" {
		linkType = bench.LinkTypeOf(results)
	}
	if linkType == "" && ok {
		linkType = p.LinkType // what the profile's fabric is
	}
	var baseline *bench.Result
	if f.baseline != "" {
		b, err := loadResult(ctx, f.baseline, nil, f.opts)
		if err != nil {
			return in, fmt.Errorf("--baseline: %w", err)
		}
		if !b.OK || b.Kind != bench.KindTraining {
			return in, fmt.Errorf("--baseline %s: want a successful training run, got %s (%s)", f.baseline, b.Tool, orNone(b.Error))
		}
		baseline = &b
	}
	gdr, _ := gpudirectClasses(f.gdrClasses) // validated
	in.Verdicts = bench.Judge(bench.JudgeInput{Results: in.Results, LineRateGbps: in.LineRateGbps, NICs: in.NICs,
		GPUsPerNode: f.gpusPerNode, Thresholds: in.Thresholds, Roles: f.roles, GPUDirect: gdr, LinkType: linkType, Baseline: baseline,
		Profile: in.Profile, NearHCAs: near})
	return in, nil
}

// chooseProfile is --profile, else the profile of the topology's link
// layer, else of the results' (perftest states it); how says which.
func (f *reportFlags) chooseProfile(topoLinkType string, results []bench.Labelled) (p bench.Profile, ok bool, how string) {
	if f.profile != "" {
		p, err := bench.ProfileNamed(f.profile)
		return p, err == nil, "--profile"
	}
	if p, ok := bench.ProfileFor(topoLinkType); ok {
		return p, true, "from the topology's link layer, " + topoLinkType + "; --profile names another"
	}
	if lt := bench.LinkTypeOf(results); lt != "" {
		p, ok := bench.ProfileFor(lt)
		return p, ok, "from the results' link layer, " + lt + "; --profile names another"
	}
	return bench.Profile{}, false, ""
}

// railLinkLayer is the link layer of the NICs GPUs are railed to (of the
// first RDMA NIC on a node without GPUs), "" when unknown.
func railLinkLayer(t *topology.Topology) string {
	for _, r := range t.Rails {
		if n, ok := t.NIC(r.NIC); ok && n.LinkLayer != "" {
			return n.LinkLayer
		}
	}
	for _, n := range t.NICs {
		if n.LinkLayer != "" {
			return n.LinkLayer
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "no error"
	}
	return s
}

// gpudirectClasses reads --gpudirect-classes NEAR,FAR (none: unknown).
func gpudirectClasses(s []string) (bench.GPUDirectClasses, error) {
	if len(s) == 0 {
		return bench.GPUDirectClasses{}, nil
	}
	if len(s) != 2 {
		return bench.GPUDirectClasses{}, fmt.Errorf("--gpudirect-classes %q: want NEAR,FAR such as PIX,PHB", strings.Join(s, ","))
	}
	var c [2]topology.Class
	for i, name := range s {
		var err error
		if c[i], err = topology.ParseClass(name); err != nil {
			return bench.GPUDirectClasses{}, fmt.Errorf("--gpudirect-classes: %w", err)
		}
	}
	return bench.GPUDirectClasses{Near: c[0].String(), Far: c[1].String()}, nil
}

// parseResultSpec splits SCENARIO=FILE or SCENARIO@NODES=FILE.
func parseResultSpec(spec string) (scenario string, nodes int, path string, err error) {
	label, path, ok := strings.Cut(spec, "=")
	scenario, n, hasNodes := strings.Cut(label, "@")
	if !ok || scenario == "" || path == "" {
		return "", 0, "", fmt.Errorf("--result %q: want SCENARIO=FILE or SCENARIO@NODES=FILE", spec)
	}
	if hasNodes {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > maxNodes {
			return "", 0, "", fmt.Errorf("--result %q: the node count after '@' must be an integer from 1 to %d", spec, maxNodes)
		}
		nodes = v
	}
	return scenario, nodes, path, nil
}
