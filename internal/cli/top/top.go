package top

import (
	"context"
	"fmt"
	"io"
	"os"
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
}

// NewCommand returns the `railyard top` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "top [--interval 2s] [-n N] [--sort traffic|errors|congestion] [--by-pod]",
		Short: "Live RDMA traffic, errors and congestion per device and pod on this node",
		Long: `top reads every RDMA port's counters on this node (PFs and VFs with an RDMA
device of their own) every --interval and shows their rates: bytes and
packets each way, and how fast the error and congestion counters climb
(docs/counters.md lists them). The holding pod comes from kubelet's
PodResources (--podresources; "" to skip): devices the device plugin handed
out by PCI address. --by-pod adds up each pod's devices.

Counter wraps and device resets are accounted for: a rate is never
negative, and a port whose counters were reset is marked "reset".`,
		Example: `  railyard top
  railyard top --by-pod --interval 5s
  railyard top -n 1 --sort errors --podresources ""`,
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
			return run(cmd.Context(), s, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.sysfs, "sysfs", "", "sysfs root (default /sys)")
	fl.StringVar(&o.socket, "podresources", defaultSocket, `kubelet's PodResources socket, for the pods holding devices ("" to skip)`)
	fl.DurationVar(&o.interval, "interval", 2*time.Second, "time between refreshes")
	fl.IntVarP(&o.iterations, "iterations", "n", 0, "refreshes to show, 0 until interrupted")
	fl.StringVar(&o.sortBy, "sort", "traffic", "order: traffic, errors or congestion")
	fl.BoolVar(&o.byPod, "by-pod", false, "one row per pod (its devices added up) instead of per device")
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
	clear := isTerminal(s.Out)
	prev := map[portKey]rdmacounter.Sample{}
	devs, _ := devices(ctx, topo, lister)
	read(fs, devs, prev, time.Now())
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
		read(fs, devs, cur, time.Now())
		if clear {
			fmt.Fprint(s.Out, "\x1b[H\x1b[2J")
		}
		if err := render(s.Out, frame(devs, prev, cur, o), note, o); err != nil {
			return err
		}
		prev = cur
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

// isTerminal reports whether w is a terminal, where each frame replaces
// the last.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
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
