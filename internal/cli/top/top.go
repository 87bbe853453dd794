package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// defaultSocket is kubelet's PodResources socket.
const defaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// minInterval bounds --interval: each refresh reads every port's counters.
const minInterval = 100 * time.Millisecond

type options struct {
	sysfs      string
	socket     string
	interval   time.Duration
	iterations int
	sortBy     string
	byPod      bool
	// Cluster mode (--cluster): every agent's /metrics through the API
	// server, a row per job, or per port of one --job.
	cluster               bool
	kubeconfig, namespace string
	selector, job         string
	port                  int
}

// NewCommand returns the `railyard top` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "top [--interval 2s] [-n N] [--sort traffic|errors|congestion] [--by-pod | --cluster [--job [NAMESPACE/]NAME]]",
		Short: "Live RDMA traffic, errors and congestion per device and pod on this node, or per job across the cluster",
		Long: `top reads every RDMA port's counters on this node (PFs and VFs with an RDMA
device of their own) every --interval and shows their rates: bytes and
packets each way, and how fast the error and congestion counters climb
(docs/counters.md lists them). The holding pod comes from kubelet's
PodResources (--podresources; "" to skip): devices the device plugin handed
out by PCI address. --by-pod adds up each pod's devices.

Counter wraps and device resets are accounted for: a rate is never
negative, and a port whose counters were reset is marked "reset".

--cluster reads every agent's /metrics through the API server's pod proxy
(--kubeconfig; the agents of --namespace with --selector's labels, port
--port) instead of this node's sysfs, and shows a row per job: the devices
its pods hold on every node added up, by the counters' job_name label (the
chart's metrics.jobNames; a pod without a job is its own row). --job
NAMESPACE/NAME (or NAME, when one namespace has a job of that name) shows
that job's ports one by one, with their node, rail and pod: a rail idle
while its peers carry the job, or one node's errors, stands out. Every
agent is read at once, each within --interval: one that does not answer
is named under the header and its node's ports show "(no answer)".

A rate top has no value for (no counter for it on the device, a counter
that could not be read, an agent that did not answer) shows as "-",
never as 0; what could not be read is said under the header.`,
		Example: `  railyard top
  railyard top --by-pod --interval 5s
  railyard top -n 1 --sort errors --podresources ""
  railyard top --cluster --sort errors
  railyard top --cluster --job ml/llama-70b -n 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.interval < minInterval {
				return fmt.Errorf("--interval %s: want at least %s", o.interval, minInterval)
			}
			if o.iterations < 0 {
				return fmt.Errorf("-n %d: want 0 (until interrupted) or more", o.iterations)
			}
			if _, ok := sorters[o.sortBy]; !ok {
				return fmt.Errorf("--sort %q: want traffic, errors or congestion", o.sortBy)
			}
			if !o.cluster {
				for _, f := range []string{"job", "kubeconfig", "namespace", "selector", "port"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--%s needs --cluster", f)
					}
				}
				return run(cmd.Context(), s, o)
			}
			if o.byPod {
				return errors.New("--by-pod is for one node: --cluster shows jobs (--job NAME: its ports)")
			}
			if ns, name, ok := strings.Cut(o.job, "/"); ok && (ns == "" || name == "" || strings.Contains(name, "/")) {
				return fmt.Errorf("--job %q: want NAME or NAMESPACE/NAME", o.job)
			}
			if o.port < 1 || o.port > 65535 {
				return fmt.Errorf("--port %d: want 1 to 65535", o.port)
			}
			return runCluster(cmd.Context(), s, o, nil)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.sysfs, "sysfs", "", "sysfs root (default /sys)")
	fl.StringVar(&o.socket, "podresources", defaultSocket, `kubelet's PodResources socket, for the pods holding devices ("" to skip)`)
	fl.DurationVar(&o.interval, "interval", 2*time.Second, "time between refreshes")
	fl.IntVarP(&o.iterations, "iterations", "n", 0, "refreshes to show, 0 until interrupted")
	fl.StringVar(&o.sortBy, "sort", "traffic", "order: traffic, errors or congestion")
	fl.BoolVar(&o.byPod, "by-pod", false, "one row per pod (its devices added up) instead of per device")
	fl.BoolVar(&o.cluster, "cluster", false, "every agent's counters through the API server: one row per job")
	fl.StringVar(&o.job, "job", "", "with --cluster: the ports of this job (NAMESPACE/NAME, or its job_name NAME alone when one namespace has it) one by one")
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "with --cluster: kubeconfig file (default in-cluster, KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&o.namespace, "namespace", defaultNamespace, "with --cluster: the agents' namespace")
	fl.StringVar(&o.selector, "selector", defaultSelector, "with --cluster: the agent pods' labels")
	fl.IntVar(&o.port, "port", defaultPort, "with --cluster: the agents' metrics port")
	return cmd
}

func run(ctx context.Context, s iostreams.Streams, o options) error {
	fs := sysfs.New(o.sysfs)
	topo, err := discovery.Discover(ctx, fs.Root)
	if err != nil {
		return err
	}
	var lister podlist.Lister
	if o.socket != "" {
		c := podlist.New(o.socket)
		defer c.Close()
		lister = c
	}
	clear := iostreams.IsTerminal(s.Out)
	prev := map[portKey]rdmacounter.Sample{}
	devs, _ := devices(ctx, topo, lister)
	before := read(fs, devs, prev, time.Now())
	for i := 0; o.iterations == 0 || i < o.iterations; i++ {
		t := time.NewTimer(o.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil // interrupted: the last frame stays on the screen
		case <-t.C:
		}
		devs, note := devices(ctx, topo, lister)
		cur := map[portKey]rdmacounter.Sample{}
		now := read(fs, devs, cur, time.Now())
		if clear {
			fmt.Fprint(s.Out, "\x1b[H\x1b[2J")
		}
		if err := render(s.Out, frame(devs, prev, cur, o), note, unreadableNotes(before, now), o); err != nil {
			return err
		}
		prev, before = cur, now
	}
	return nil
}

// devices lists the node's RDMA devices with the containers holding them;
// note says why owners are missing, if they are.
func devices(ctx context.Context, topo *topology.Topology, lister podlist.Lister) ([]rdmacounter.Device, string) {
	if lister == nil {
		return rdmacounter.Devices(topo, nil), ""
	}
	pods, err := lister.List(ctx)
	if err != nil {
		return rdmacounter.Devices(topo, nil), fmt.Sprintf("pods unknown: PodResources: %v", err)
	}
	return rdmacounter.Devices(topo, owners(pods)), ""
}

// owners maps the PCI addresses kubelet lists as device IDs to their
// container. Other IDs (shares "<pci>-s<k>", late binding's tokens) name
// no one device and are left out.
func owners(pods []podlist.Pod) map[string]rdmacounter.Owner {
	out := map[string]rdmacounter.Owner{}
	for id, h := range podlist.Holders(pods) {
		if pciaddr.IsCanonical(id) {
			out[id] = rdmacounter.Owner{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container}
		}
	}
	return out
}
