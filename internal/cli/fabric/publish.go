package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
	"github.com/railyard-io/railyard/internal/cli/topo"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/ibneighbor"
	"github.com/railyard-io/railyard/internal/lldp"
	"github.com/railyard-io/railyard/internal/nodefabric"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// Bounds of publish's timing flags.
const (
	minWait     = time.Second
	maxWait     = 10 * time.Minute
	minInterval = 10 * time.Second
	// maxHoldRounds bounds --hold-rounds: a day of 5 minute rounds.
	maxHoldRounds = 288
)

type publishOptions struct {
	source         topo.Source
	node           string
	kubeconfig     string
	wait, interval time.Duration
	watch, dryRun  bool
	holdRounds     int
	keys           keyFlags
}

func newPublishCommand(s iostreams.Streams) *cobra.Command {
	o := publishOptions{}
	cmd := &cobra.Command{
		Use:   "publish [--node NAME] [--wait 35s] [--watch [--interval 5m]] [--hold-rounds 3] [--labels railyard|topograph] [--dry-run]",
		Short: "Listen for LLDP on this node's NIC ports and publish their rails and leaves on its Node",
		Long: `publish discovers this node's NICs and their rails (NIC i serves GPU i's
share), listens for LLDP on every NIC port's netdev for --wait, and
writes the result on this node's Node object: the railyard.io/fabric-ports
annotation (read by 'railyard fabric') and the labels schedulers read,
rail.railyard.io/<rail>=<leaf>, the leaf set (railyard.io/leaf-set, or
fabric.topograph.run/tier-0 with --labels topograph: nodes with the same
value reach the same leaf on every rail) and railyard.io/degraded-rails.
Only those keys are changed.

A neighbor not heard stays published for --hold-rounds rounds (marked
staleRounds in the annotation). Past that, or at once after a shutdown
frame, the rail loses its label and is listed in railyard.io/degraded-rails,
while the leaf set still counts it (its last leaf, kept in the annotation
as lastSwitch), so the node stays in its scheduling domain. The hold
continues from the Node's annotation when the publisher restarts; delete
the annotation to forget rails the node no longer has.

Each round listens the whole --wait. A port that hears two neighbors in it
(two switches, two switch ports, a second LLDP sender on the link) is
published with both (switches and switchPorts in the annotation) and a
warning naming them; its rail label keeps the leaf it named before.

It needs the host's network namespace and CAP_NET_RAW (the chart's fabric
DaemonSet runs it so, with --watch); --dry-run prints what it would publish
and needs no cluster. Switches send LLDP every 30 s by default: keep --wait
above their transmit interval.`,
		Example: `  railyard fabric publish --dry-run --wait 35s
  railyard fabric publish --node gpu-node-7 --watch --interval 5m --hold-rounds 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), s) },
	}
	o.source.AddFlags(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.node, "node", "", "this node's name (default $RAILYARD_NODE_NAME, else the host name)")
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default in-cluster, KUBECONFIG, else ~/.kube/config)")
	fl.DurationVar(&o.wait, "wait", 35*time.Second, "how long to listen for LLDP on the ports each round")
	fl.BoolVar(&o.watch, "watch", false, "publish again every --interval until stopped")
	fl.DurationVar(&o.interval, "interval", 5*time.Minute, "with --watch: time between two rounds")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the ports and labels as JSON instead of publishing them")
	fl.IntVar(&o.holdRounds, "hold-rounds", nodefabric.DefaultHoldRounds, "rounds in a row a neighbor not heard stays published before its rail counts as degraded (0: none; counted from the Node's annotation)")
	o.keys.add(cmd, false)
	return cmd
}

func (o *publishOptions) validate() error {
	if o.wait < minWait || o.wait > maxWait {
		return fmt.Errorf("--wait %s: want %s to %s", o.wait, minWait, maxWait)
	}
	if o.watch && o.interval < minInterval {
		return fmt.Errorf("--interval %s: want at least %s", o.interval, minInterval)
	}
	if o.watch && o.dryRun {
		return errors.New("--watch and --dry-run are mutually exclusive")
	}
	if o.holdRounds < 0 || o.holdRounds > maxHoldRounds {
		return fmt.Errorf("--hold-rounds %d: want 0 to %d", o.holdRounds, maxHoldRounds)
	}
	if o.node == "" {
		o.node = os.Getenv("RAILYARD_NODE_NAME")
	}
	if o.node == "" && !o.dryRun {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("no --node and no host name: %w", err)
		}
		o.node = h
	}
	return nil
}

func (o *publishOptions) run(ctx context.Context, s iostreams.Streams) error {
	if err := o.validate(); err != nil {
		return err
	}
	keys, err := o.keys.resolve()
	if err != nil {
		return err
	}
	var loadErr error
	ports := func() []fabric.Port {
		t, _, err := o.source.Load(ctx)
		loadErr = err
		if err != nil {
			return nil
		}
		return fabric.PortsOf(t)
	}
	w := nodefabric.Watch{Ports: ports, Listen: lldp.ReceiveAll, InfiniBand: ibneighbor.Exec{}, Wait: o.wait, Interval: o.interval, HoldRounds: o.holdRounds}
	if o.dryRun {
		w.Publish = func(context.Context, []fabric.Port) (bool, error) { return false, nil }
		got, _, err := w.Once(ctx)
		if err == nil {
			err = loadErr
		}
		if err != nil {
			return err
		}
		warnSeveral(s.ErrOut, o.node, got)
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Ports  []fabric.Port     `json:"ports"`
			Labels map[string]string `json:"labels"`
		}{got, keys.Labels(got)})
	}
	cs, err := client(o.kubeconfig)
	if err != nil {
		return err
	}
	pub := nodefabric.Publisher{Client: cs, Node: o.node, Keys: keys}
	w.Previous = pub.Previous
	w.Publish = func(ctx context.Context, ports []fabric.Port) (bool, error) {
		// A round whose discovery failed knows nothing of the NICs:
		// publishing it would hold, then degrade, every rail.
		if loadErr != nil {
			return false, loadErr
		}
		return pub.Publish(ctx, ports)
	}
	report := func(ports []fabric.Port, changed bool, err error) {
		if err == nil {
			err = loadErr
		}
		if err != nil {
			fmt.Fprintf(s.ErrOut, "railyard fabric publish: node %s: %v\n", o.node, err)
			return
		}
		warnSeveral(s.ErrOut, o.node, ports)
		heard, held, degraded := 0, 0, 0
		for _, p := range ports {
			switch {
			case p.Switch != "" && p.StaleRounds > 0:
				held++
			case p.Switch != "":
				heard++
			case p.LastSwitch != "":
				degraded++
			}
		}
		fmt.Fprintf(s.ErrOut, "railyard fabric publish: node %s: %d ports, %d with a neighbor, %d held, %d degraded, %s\n", o.node, len(ports), heard, held, degraded,
			map[bool]string{true: "published", false: "unchanged"}[changed])
	}
	if o.watch {
		w.Report = report
		w.Run(ctx)
		return nil
	}
	got, changed, err := w.Once(ctx)
	if err == nil {
		err = loadErr
	}
	report(got, changed, err)
	return err
}

// warnSeveral writes a warning for each port that heard more than one
// neighbor this round, naming them (escaped: a switch name comes from an
// LLDP frame anyone on the link can send) and the one published.
func warnSeveral(w io.Writer, node string, ports []fabric.Port) {
	for _, p := range ports {
		if nbs := p.HeardNeighbors(); len(nbs) > 1 {
			fmt.Fprintf(w, "railyard fabric publish: node %s: WARN rail %d NIC %s hears %d neighbors (%s): published as %s; look for a switch or hub between the NIC and its leaf, or a second LLDP sender on the link\n",
				termsafe.Escape(node), p.Rail, termsafe.Escape(p.NIC), len(nbs), termsafe.Escape(strings.Join(nbs, ", ")), termsafe.Escape(p.Switch))
		}
	}
}

func client(kubeconfig string) (kubernetes.Interface, error) {
	return kubeclient.New(kubeconfig, requestTimeout)
}
