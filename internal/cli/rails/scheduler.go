package rails

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/schedtopo"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// schedFlags are the flags every scheduler subcommand shares: where the
// nodes come from and the levels' label keys.
type schedFlags struct {
	kubeconfig, from, selector string
	scheme, leafSet, unit      string
}

func (f *schedFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "read the nodes from this file ('kubectl get nodes -o json') instead of the cluster")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default KUBECONFIG, else ~/.kube/config)")
	fl.StringVarP(&f.selector, "selector", "l", "", "only the nodes this label selector matches (the GPU nodes)")
	fl.StringVar(&f.scheme, "labels", fabric.SchemeRailyard, "the levels' label keys: railyard ("+fabric.UnitLabel+" over "+fabric.LeafSetLabel+
		") or topograph ("+fabric.TopographTier1+" over "+fabric.TopographTier0+")")
	fl.StringVar(&f.leafSet, "leaf-set-label", "", "the leaf set level's key (default: the --labels scheme's)")
	fl.StringVar(&f.unit, "unit-label", "", "the unit level's key (default: the --labels scheme's)")
}

// keys resolves the levels' keys.
func (f schedFlags) keys() (fabric.LabelKeys, error) {
	k, err := fabric.SchemeKeys(f.scheme)
	if err != nil {
		return k, fmt.Errorf("--labels: %w", err)
	}
	if f.leafSet != "" {
		k.LeafSet = f.leafSet
	}
	if f.unit != "" {
		k.Unit = f.unit
	}
	if err := k.Validate(); err != nil {
		return k, fmt.Errorf("label keys: %w", err)
	}
	return k, nil
}

// domains reads the nodes and groups them by the levels, writing what it
// found to stderr.
func (f schedFlags) domains(ctx context.Context, s iostreams.Streams, connect connectFunc) (schedtopo.Domains, error) {
	k, err := f.keys()
	if err != nil {
		return schedtopo.Domains{}, err
	}
	sel, err := labels.Parse(f.selector)
	if err != nil {
		return schedtopo.Domains{}, fmt.Errorf("--selector: %w", err)
	}
	var nodes []schedtopo.Node
	if f.from != "" {
		nodes, err = readNodes(f.from, sel)
	} else {
		nodes, err = listNodes(ctx, connect, f.kubeconfig, sel)
	}
	if err != nil {
		return schedtopo.Domains{}, err
	}
	d := schedtopo.Group(nodes, k)
	summarize(s, d)
	return d, nil
}

// summarize writes the domains the labels draw, and the nodes a
// topology-aware scheduler leaves out, to stderr.
func summarize(s iostreams.Streams, d schedtopo.Domains) {
	fmt.Fprintf(s.ErrOut, "%d nodes: %d leaf sets (%s, the largest %d nodes), %d units (%s, the largest %d nodes)\n",
		d.Nodes, len(d.LeafSets), d.Keys.LeafSet, d.Largest(d.Keys.LeafSet), len(d.Units), d.Keys.Unit, d.Largest(d.Keys.Unit))
	for _, m := range []struct {
		key   string
		nodes []string
		fix   string
	}{
		{d.Keys.LeafSet, d.WithoutLeafSet, "railyard fabric publish labels them (the chart's fabric.enabled)"},
		{d.Keys.Unit, d.WithoutUnit, "railyard fabric label-units labels them (fabric.units.enabled)"},
	} {
		if len(m.nodes) > 0 {
			fmt.Fprintf(s.ErrOut, "warning: %d nodes without %s (%s): a topology-aware job is placed on none of them; %s\n",
				len(m.nodes), m.key, list(m.nodes, 5), m.fix)
		}
	}
	for _, c := range d.Conflicts() {
		fmt.Fprintln(s.ErrOut, "warning: the labels do not nest:", termsafe.Escape(c))
	}
}

// list is the first n names, escaped, and how many more.
func list(names []string, n int) string {
	out := make([]string, 0, n+1)
	for i, name := range names {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(names)-n))
			break
		}
		out = append(out, termsafe.Escape(name))
	}
	return strings.Join(out, ", ")
}

func objectName(flag, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s %q: %s", flag, name, strings.Join(errs, "; "))
	}
	return nil
}

func write(s iostreams.Streams, objects ...any) error {
	b, err := schedtopo.YAML(objects...)
	if err != nil {
		return err
	}
	_, err = s.Out.Write(b)
	return err
}

func newSchedulerCommand(s iostreams.Streams, connect connectFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Print the objects topology-aware schedulers need to place a job under one leaf set or unit",
		Long: `scheduler prints, from the fabric's node labels, what a topology-aware scheduler
needs to keep a job's pods under one value of a label. Two levels nest over
kubernetes.io/hostname: the unit (` + fabric.UnitLabel + `, written by
'railyard fabric label-units') and, inside it, the leaf set (` + fabric.LeafSetLabel + `,
written by each node's 'railyard fabric publish': nodes cabled to the same leaf
on every rail). --labels topograph reads NVIDIA Topograph's keys instead
(` + fabric.TopographTier1 + ` over ` + fabric.TopographTier0 + `).

The nodes are read from the cluster (or --from a saved 'kubectl get nodes -o
json'): stderr says how many domains each level has, and which nodes lack a
level's label (a topology-aware job is placed on none of them). The objects go
to stdout, for kubectl apply -f -. docs/fabric.md ("Handing the fabric to a
scheduler") shows each.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newKueueCommand(s, connect), newVolcanoCommand(s, connect), newKAICommand(s, connect), newPodGroupCommand(s, connect))
	return cmd
}
