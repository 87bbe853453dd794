package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
)

// connectFunc returns the cluster a run talks to, from a kubeconfig path
// ("" for KUBECONFIG or ~/.kube/config).
type connectFunc func(kubeconfig string) (benchrun.Cluster, error)

// kubeconfigCluster connects with the user's kubeconfig: --kubeconfig,
// else KUBECONFIG, else ~/.kube/config (client-go's loading rules).
func kubeconfigCluster(kubeconfig string) (benchrun.Cluster, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return benchrun.Kube{Client: cs, Dynamic: dyn}, nil
}

// restConfig loads the kubeconfig with every request bounded by
// benchrun.RequestTimeout: an API server that accepts the connection and
// never answers fails the request instead of hanging the run.
func restConfig(kubeconfig string) (*rest.Config, error) {
	return kubeclient.Config(kubeconfig, benchrun.RequestTimeout)
}

type runFlags struct {
	file, kubeconfig, namespace string
	opts                        benchrun.Options
}

func newRunCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	f := reportFlags{th: bench.DefaultThresholds(), roles: bench.DefaultRoles()}
	var r runFlags
	cmd := &cobra.Command{
		Use:   "run -f PLAN.yaml [--kubeconfig FILE] [--namespace NS] [--timeout 15m] [--keep] [--out DIR]",
		Short: "Run a bench plan on a cluster: apply, wait, collect logs, judge, write the report, clean up",
		Long: `run applies a plan printed by bench plan (its pod pairs and its MPIJobs)
to the cluster of your kubeconfig (--kubeconfig, else KUBECONFIG, else
~/.kube/config), shows progress (pods created, scheduled, running, done; a
progress bar on a terminal, plain lines otherwise), waits for every run up
to --timeout, collects every pod's log, parses each run's result, judges
them as bench report does (the scenario is the run's variant: rdma, tcp,
tcp-podnet) and writes the report directory (--out) with the logs under
logs/. It deletes what it created, also on Ctrl-C or SIGTERM, unless --keep.

A run whose pod fails, times out or is interrupted is reported as failed,
with its reason, in the runs table and as a failed run check in the report;
the other runs are judged as usual. The exit status is non-zero when a run
or a check failed or the cleanup did not finish.

  railyard bench plan --image IMG --probe-image ghcr.io/railyard-io/railyard:TAG \
    --nodes a,b --tests perftest,probe --variant all > plan.yaml
  railyard bench run -f plan.yaml --line-rate-gbps 100 --out report/

A client pod whose server is another pod of the run (the probe pair) is
created once that server has an IP, and connects to the IP: no cluster DNS
is needed.

Each MPIJob (--tests nccl, osu, horovod) is a run of its own and needs the
MPI Operator (kubeflow.org/v2beta1 MPIJobs) on the cluster; without it
those runs fail with an error saying so and the others still run. An
MPIJob's result is its launcher pod's log; the launcher's and workers'
logs are saved under logs/. Its scenario is its variant (rdma, tcp,
tcp-podnet).`,
		Example: `  railyard bench plan --image IMAGE --nodes a,b --tests perftest,nccl > plan.yaml
  railyard bench run -f plan.yaml --line-rate-gbps 100 --out report/
  railyard bench run -f plan.yaml --machine dgx-h100 --profile infiniband --keep`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.run(cmd, s, &f, connect)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&r.file, "filename", "f", "", "the plan: bench plan's YAML (- for stdin)")
	fl.StringVar(&r.kubeconfig, "kubeconfig", "", "kubeconfig file (default KUBECONFIG, else ~/.kube/config)")
	fl.StringVarP(&r.namespace, "namespace", "n", "", "run every object in this namespace (default the plan's)")
	fl.DurationVar(&r.opts.Timeout, "timeout", benchrun.DefaultTimeout, "how long to wait for every run to finish")
	fl.BoolVar(&r.opts.Keep, "keep", false, "leave the objects in the cluster (for debugging)")
	fl.DurationVar(&r.opts.Poll, "poll-interval", benchrun.DefaultPoll, "how often pod states are read")
	f.addFlags(cmd)
	return cmd
}

func (r *runFlags) run(cmd *cobra.Command, s iostreams.Streams, f *reportFlags, connect connectFunc) error {
	if r.file == "" {
		return errors.New("give the plan with -f FILE (bench plan's output; - for stdin)")
	}
	errs := f.validate()
	if r.opts.Timeout <= 0 || r.opts.Poll <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %v, --poll-interval %v: want positive durations", r.opts.Timeout, r.opts.Poll))
	}
	if r.namespace != "" {
		if msgs := validation.IsDNS1123Label(r.namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %q: not a namespace name: %s", r.namespace, strings.Join(msgs, "; ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	data, err := readInput(cmd.Context(), r.file, s.In)
	if err != nil {
		return err
	}
	plan, err := benchrun.Load(strings.NewReader(string(data)))
	if err != nil {
		return fmt.Errorf("%s: %w", r.file, err)
	}
	if len(f.gdrClasses) == 0 {
		f.gdrClasses = planGPUDirectClasses(data) // the classes bench plan chose the NICs by
		if _, err := gpudirectClasses(f.gdrClasses); err != nil {
			return fmt.Errorf("%s: %w", r.file, err)
		}
	}
	if r.namespace != "" {
		plan.SetNamespace(r.namespace)
	}
	c, err := connect(r.kubeconfig)
	if err != nil {
		return err
	}
	prog := newProgressPrinter(s.ErrOut)
	opts := r.opts
	opts.Parse, opts.Progress = f.opts, prog.update
	out, err := benchrun.Execute(cmd.Context(), c, plan, opts)
	prog.done()
	if err != nil {
		return errors.Join(err, cleanupError(out))
	}
	if err := printRuns(s.Out, out); err != nil {
		return err
	}
	if out.Interrupted {
		return errors.Join(cmd.Context().Err(), cleanupError(out))
	}
	in, err := f.judge(cmd.Context(), out.Results())
	if err != nil {
		return errors.Join(err, cleanupError(out))
	}
	fmt.Fprintln(s.Out)
	n, err := writeReport(s, f.out, in)
	if err == nil {
		err = writeLogs(filepath.Join(f.out, "logs"), out)
	}
	var runErr error
	if k := out.Failed(); k > 0 {
		runErr = fmt.Errorf("%d of %d runs failed", k, len(out.Runs))
	}
	return errors.Join(err, runErr, failedChecks(n), cleanupError(out))
}

func cleanupError(out benchrun.Outcome) error {
	if out.CleanupErr == nil {
		return nil
	}
	return fmt.Errorf("cleanup: %w", out.CleanupErr)
}

// printRuns prints one line per run: its status and headline number, or
// why it failed; then what was kept or cleaned up.
func printRuns(w io.Writer, out benchrun.Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSCENARIO\tSTATUS\tRESULT")
	for _, r := range out.Runs {
		detail := r.Reason
		if r.Status == benchrun.Succeeded {
			detail = r.Result.Tool
			if m, ok := bench.HeadlineMetric(r.Result, bench.DefaultLargeBytes); ok {
				detail = fmt.Sprintf("%s: %s %.3f %s", r.Result.Tool, m.Name, m.Value, m.Unit)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Scenario, r.Status, detail)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	for _, r := range out.Runs {
		if r.ServerVia != "" {
			fmt.Fprintf(w, "%s: the client reached %s\n", r.Name, r.ServerVia)
		}
	}
	switch {
	case out.Kept:
		fmt.Fprintf(w, "kept %d objects (--keep); delete them with: kubectl delete pod,service -l %s -A\n", len(out.Created), benchplan.LabelRun)
		for _, c := range out.Created {
			if kind, rest, _ := strings.Cut(c, "/"); kind == "mpijob" {
				ns, name, _ := strings.Cut(rest, "/")
				fmt.Fprintf(w, "  and: kubectl delete mpijob -n %s %s\n", ns, name)
			}
		}
	case out.CleanupErr != nil:
		fmt.Fprintf(w, "cleanup incomplete: %v\n", out.CleanupErr)
	case out.Interrupted:
		fmt.Fprintf(w, "sent the deletes of the %d objects the run created (interrupted: not waiting for them to go)\n", len(out.Created))
	default:
		fmt.Fprintf(w, "deleted the %d objects the run created\n", len(out.Created))
	}
	return nil
}

// writeLogs saves every collected log as logs/<pod>.log.
func writeLogs(dir string, out benchrun.Outcome) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	for _, r := range out.Runs {
		for pod, data := range r.Logs {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(pod)+".log"), data, 0o644); err != nil {
				return fmt.Errorf("logs: %w", err)
			}
		}
	}
	return nil
}

// progressPrinter shows progress on w: a bar redrawn in place on a
// terminal, otherwise a line whenever the counts change.
type progressPrinter struct {
	w    io.Writer
	tty  bool
	last string
	drew bool
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	return &progressPrinter{w: w, tty: iostreams.IsTerminal(w)}
}

const barWidth = 24

func (p *progressPrinter) update(pr benchrun.Progress) {
	counts := fmt.Sprintf("runs %d/%d done; pods %d/%d created, %d scheduled, %d running, %d succeeded, %d failed",
		pr.RunsDone, pr.Runs, pr.Created, pr.Pods, pr.Scheduled, pr.Running, pr.Succeeded, pr.Failed)
	elapsed := pr.Elapsed.Round(time.Second)
	if p.tty {
		filled := 0
		if pr.Runs > 0 {
			filled = barWidth * pr.RunsDone / pr.Runs
		}
		bar := strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled)
		fmt.Fprintf(p.w, "\r\033[K[%s] %s (%v)", bar, counts, elapsed)
		p.drew = true
		return
	}
	if counts != p.last {
		fmt.Fprintf(p.w, "bench run: %v: %s\n", elapsed, counts)
		p.last = counts
	}
}

func (p *progressPrinter) done() {
	if p.tty && p.drew {
		fmt.Fprintln(p.w)
	}
}
