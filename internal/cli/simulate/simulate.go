package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/chart"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/topo"
	"github.com/railyard-io/railyard/internal/sim"
	"github.com/railyard-io/railyard/internal/simreport"
)

// defaultMachine is simulated when neither --machine nor --sysfs is given.
const defaultMachine = "dgx-h100"

type options struct {
	src          topo.Source
	nodes, pods  int
	seed         uint64
	mix          string
	devices      string
	load         float64
	tmPolicy     string
	scheduler    string
	gpusKnown    float64
	bw           string
	policies     []string
	policiesSet  bool // --policies given (all-pfs takes none)
	workers      int
	suNodes      int
	maxWait      float64
	rechoose     float64
	asJSON       bool
	report       string
	reportFormat string
}

// NewCommand returns the `railyard simulate` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	o := options{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate a GPU cluster and compare NIC allocation policies side by side",
		Long: `simulate runs a cluster of identical GPU nodes through a seeded workload of pods
(1, 2, 4 and 8 GPUs, asking one RDMA device per GPU or one per pod) and lets
every NIC allocation policy choose the pods' devices:

  kubelet       today's default: no preference, kubelet takes sorted device IDs
                (NUMA-aligned when the Topology Manager is on)
  numa          NUMA-only alignment: any free device on the GPUs' NUMA nodes
  spread        one device per rail (PF) before doubling up
  gpu-aware     each GPU a device on its closest PF (Railyard's device plugin)
  packed        fill one PF's VFs before the next
  late-bound    gpu-aware behind late binding: kubelet allocates NUMA tokens, the
                device behind each is chosen at sandbox creation, GPUs known
  dra-pcieroot  the DRA scheduler's first fit with a matchAttribute constraint on
                resource.kubernetes.io/pcieRoot between each GPU and its NIC
  job-rails     one rail set for every pod of a job: each pod on its own node with
                the GPUs of the same rails, each GPU a device on its nearest NIC
                among them, the rail set with room on the most nodes first
                (a single pod: gpu-aware in a claim)
  optimal       the exact best choice with the GPUs known and every free device
                open (the reference)

and, only when asked with --policies:

  late-bound-lowest-numa  late-bound with kubelet's tokens preferred lowest NUMA
                         node first, as the device plugin first did (late-bound
                         balances them over the NUMA nodes of the pod's GPUs,
                         or of the offer when the GPUs are not allocated yet):
                         kept to show why
  job-rails-first-fit    job-rails trying rail sets in the scheduler's order
                         (the first pod's rails first): strands more pods

The first five answer kubelet's GetPreferredAllocation at allocate time. Kubelet
allocates a pod's resources in Go map order, so they know the pod's GPUs only
when kubelet allocated the GPUs first: a seeded coin toss per pod, heads with
probability --gpus-known (default 0.5; 1 is the old assumption that the GPUs
are always known). Late binding, claims and optimal always know the GPUs.

GPUs are chosen the way a stock cluster chooses them (kubelet Topology Manager
over NUMA nodes, NVIDIA device plugin preferring GPUs under one PCIe switch),
the same for every policy. For each policy it reports the share of GPUs whose
nearest allocated NIC is within PXB (NCCL's default GPUDirect RDMA limit), the
class histogram, the modelled per-GPU bandwidth, rejected pods, stranded
devices and the decision latency.

Jobs of several pods (--mix PODSxGPUS:WEIGHT, e.g. 2x4:1, or --mix jobs) run on
a rail-optimized fabric: NIC i of every node is cabled to leaf i of its scalable
unit (--su-nodes nodes each; 0: one unit), units joined by a spine. Each job is
placed whole or not at all. A second table gives per policy the share of jobs
whose pods all use the same rails, the share whose traffic stays under one leaf
layer, how long jobs waited for one rail set (job-rails only; in mean pod
lifetimes, up to --max-wait) and the GPUs that waiting stranded.
job-rails-admission is the rail controller's policy: the set chosen at the
job's first pod, each pod starting when it has room on it, the set chosen again
after --rechoose-after while no pod has started; its columns count re-choices
and the GPUs held idle by pods that started before their job's others. See
docs/alloc.md for the models.`,
		Example: `  railyard simulate --machine dgx-h100
  railyard simulate --machine dgx-h100 --gpus-known 1     # the GPUs always allocated first
  railyard simulate --mix 1:2,2x4:1,4x4:1 --nodes 1024 --su-nodes 32   # jobs of 2 and 4 pods
  railyard simulate --machine dgx-1 --nodes 1000 --pods 100000 --mix small
  railyard simulate --machine dgx-a100 --devices-per pod --json
  railyard simulate --machine dgx-h100 --devices-per all-pfs   # one VF on every PF per pod
  railyard simulate --machine aws-p5 --vfs 0 --report /tmp/sim-report
  railyard simulate --sysfs /tmp/fake-sys --bw PIX=12,PXB=12,PHB=4,NODE=4,SYS=2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.src.Sysfs != "" && !cmd.Flags().Changed("vfs") {
				o.src.VFs = 0 // a sysfs tree has the VFs it has
			}
			if o.src.Sysfs == "" && o.src.Machine == "" {
				o.src.Machine = defaultMachine
			}
			o.policiesSet = cmd.Flags().Changed("policies")
			return run(cmd, s, o)
		},
	}
	o.src.AddFlags(cmd)
	o.src.VFs = 8
	cmd.Flags().Lookup("vfs").DefValue = "8"
	cmd.Flags().Lookup("machine").Usage = "simulate nodes of this built-in machine model (default " + defaultMachine + "; list them with: railyard machines)"
	cmd.Flags().Lookup("sysfs").Usage = "simulate nodes like the one described by this sysfs root"
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 100, "nodes in the cluster")
	f.IntVar(&o.pods, "pods", 10000, "pod arrivals to simulate (each placed pod also leaves: up to twice as many events)")
	f.Uint64Var(&o.seed, "seed", 1, "workload seed")
	f.StringVar(&o.mix, "mix", "uniform", "job shapes: "+strings.Join(sim.MixNames(), ", ")+", or GPUS:WEIGHT (a pod) and PODSxGPUS:WEIGHT (a job of PODS pods), e.g. 1:4,2:2,2x4:1,8:1")
	f.IntVar(&o.suNodes, "su-nodes", 0, "nodes per scalable unit of the rail-optimized fabric (each unit its own leaf per rail; 0: one unit)")
	f.Float64Var(&o.maxWait, "max-wait", 1, "how long a job waits for one rail set before it is rejected, in mean pod lifetimes")
	f.Float64Var(&o.rechoose, "rechoose-after", sim.DefaultRechooseAfter, "job-rails-admission: how long a job's pods wait on its rail set, none started, before another set is tried, in mean pod lifetimes")
	f.StringVar(&o.devices, "devices-per", string(sim.PerGPU), "NIC devices a pod asks for: gpu (one per GPU), pod (one per pod) or all-pfs (one VF on every rail PF, the published answer to kubelet's order: no policy chooses; the table's HELD/GPU says what it strands)")
	f.Float64Var(&o.load, "load", 0.9, "offered GPU load, 0 to 1 (and beyond for overload)")
	f.StringVar(&o.tmPolicy, "topology-policy", string(sim.TMBestEffort), "kubelet Topology Manager policy: none, best-effort, restricted or single-numa-node")
	f.StringVar(&o.scheduler, "scheduler", string(sim.MostAllocated), "node scoring: most-allocated (bin packing) or least-allocated")
	f.Float64Var(&o.gpusKnown, "gpus-known", sim.DefaultGPUsKnown, "probability that kubelet allocates a pod's GPUs before its NIC devices, so allocate-time policies know them (0 to 1; kubelet's map order is a coin toss; 1: the GPUs always first)")
	f.StringVar(&o.bw, "bw", sim.DefaultBandwidth().String(), "modelled per-GPU bandwidth in GB/s by class of the nearest NIC")
	f.StringSliceVar(&o.policies, "policies", sim.PolicyNames(), "policies to compare (also: "+strings.Join(sim.ExtraPolicyNames(), ", ")+")")
	f.IntVar(&o.workers, "workers", 0, "policies simulated in parallel (default: CPUs)")
	f.BoolVar(&o.asJSON, "json", false, `print JSON: {"machine","nodes","pods","policies":[{"name","gdr_fraction","mean_gbps","rejected","alloc_p99_us",...}]}`)
	f.StringVar(&o.report, "report", "", "write an HTML report with charts into this directory")
	f.StringVar(&o.reportFormat, "report-format", "png", "chart format of the report: png or svg")
	return cmd
}

func run(cmd *cobra.Command, s iostreams.Streams, o options) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.report != "" {
		// Fail before a long simulation, not after it.
		if err := checkWritable(o.report); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	t, from, err := o.src.Load(cmd.Context())
	if err != nil {
		return err
	}
	cfg.Topology = t
	cfg.Machine = o.src.Machine
	if cfg.Machine == "" {
		cfg.Machine = "sysfs " + o.src.Sysfs
	}
	res, err := sim.Run(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	// The results first: a report that cannot be written loses nothing.
	if o.asJSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		render(s.Out, res, from)
	}
	if o.report != "" {
		paths, err := simreport.Write(o.report, res, simreport.Options{Format: chart.Format(o.reportFormat)})
		if err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(s.ErrOut, "report: %s\n", paths[len(paths)-1])
	}
	return nil
}

// checkWritable creates dir if needed and checks a file can be created in
// it.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".railyard-write-check-")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func (o options) config() (sim.Config, error) {
	var errs []error
	mix, err := sim.ParseMix(o.mix)
	if err != nil {
		errs = append(errs, fmt.Errorf("--mix: %w", err))
	}
	bw, err := sim.ParseBandwidth(o.bw)
	if err != nil {
		errs = append(errs, fmt.Errorf("--bw: %w", err))
	}
	if o.reportFormat != string(chart.PNG) && o.reportFormat != string(chart.SVG) {
		errs = append(errs, fmt.Errorf("--report-format %q: want png or svg", o.reportFormat))
	}
	if o.pods < 0 || o.pods > sim.MaxPods {
		errs = append(errs, fmt.Errorf("--pods %d: want 0 to %d", o.pods, sim.MaxPods))
	}
	if o.nodes < 1 || o.nodes > sim.MaxNodes {
		errs = append(errs, fmt.Errorf("--nodes %d: want 1 to %d", o.nodes, sim.MaxNodes))
	}
	if !(o.gpusKnown >= 0 && o.gpusKnown <= 1) {
		errs = append(errs, fmt.Errorf("--gpus-known %g: want a probability, 0 to 1", o.gpusKnown))
	}
	if o.load <= 0 || math.IsNaN(o.load) || math.IsInf(o.load, 0) {
		errs = append(errs, fmt.Errorf("--load %g: want a finite number > 0", o.load))
	}
	if o.suNodes < 0 || o.suNodes > sim.MaxNodes {
		errs = append(errs, fmt.Errorf("--su-nodes %d: want 0 (one unit) to %d", o.suNodes, sim.MaxNodes))
	}
	if !(o.maxWait > 0) || math.IsInf(o.maxWait, 0) {
		errs = append(errs, fmt.Errorf("--max-wait %g: want a finite time > 0", o.maxWait))
	}
	if !(o.rechoose > 0) || math.IsInf(o.rechoose, 0) {
		errs = append(errs, fmt.Errorf("--rechoose-after %g: want a finite time > 0", o.rechoose))
	}
	var policies []sim.Policy
	seen := map[string]bool{}
	if sim.DeviceMode(o.devices) == sim.AllPFs && !o.policiesSet {
		o.policies = nil // one VF on every PF: no policy chooses
	}
	for _, n := range o.policies {
		n = strings.TrimSpace(n)
		if seen[n] {
			continue
		}
		seen[n] = true
		p, err := sim.PolicyByName(n)
		if err != nil {
			errs = append(errs, fmt.Errorf("--policies: %w", err))
			continue
		}
		policies = append(policies, p)
	}
	if len(o.policies) == 0 && sim.DeviceMode(o.devices) != sim.AllPFs {
		errs = append(errs, errors.New("--policies: none given"))
	}
	known := o.gpusKnown
	cfg := sim.Config{
		Nodes: o.nodes, Pods: o.pods, Seed: o.seed, Mix: mix,
		Devices: sim.DeviceMode(o.devices), Load: o.load,
		TopologyPolicy: sim.TopologyPolicy(o.tmPolicy), Scheduler: sim.Scheduler(o.scheduler),
		GPUsKnown: &known, Bandwidth: bw, Policies: policies, Workers: o.workers,
		SUNodes: o.suNodes, MaxWait: o.maxWait, RechooseAfter: o.rechoose,
	}
	return cfg, errors.Join(errs...)
}

// render prints the settings and the comparison table (sim.Result.Table).
func render(w io.Writer, res *sim.Result, from string) {
	fmt.Fprintf(w, "Simulated %s\n", from)
	for _, st := range res.Settings() {
		fmt.Fprintf(w, "  %s: %s\n", st.Name, st.Value)
	}
	renderTable(w, res.Table())
	if jobs, ok := res.JobTable(); ok {
		fmt.Fprintf(w, "\nJobs of several pods:\n")
		renderTable(w, jobs)
	}
}

// renderTable prints a table and its columns' notes below it.
func renderTable(w io.Writer, table sim.Table) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, c := range table.Columns {
		fmt.Fprintf(tw, "%s\t", c.Name)
	}
	fmt.Fprintln(tw)
	for _, row := range table.Rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, c := range table.Columns {
		if c.Note != "" {
			fmt.Fprintf(w, "%s: %s.\n", c.Name, c.Note)
		}
	}
}
