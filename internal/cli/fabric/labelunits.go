package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/nodefabric"
)

// minUnitInterval bounds label-units' --interval: each pass lists every
// node.
const minUnitInterval = 10 * time.Second

type labelUnitsOptions struct {
	kubeconfig, selector string
	interval             time.Duration
	watch, dryRun        bool
	keys                 keyFlags
}

func newLabelUnitsCommand(s iostreams.Streams) *cobra.Command {
	o := labelUnitsOptions{}
	cmd := &cobra.Command{
		Use:   "label-units [--labels railyard|topograph] [--unit-label KEY] [--selector LABELS] [--watch [--interval 1m]] [--dry-run]",
		Short: "Label every node with its fabric unit, learned from all nodes' published ports",
		Long: `label-units reads every node's railyard.io/fabric-ports annotation (what
'railyard fabric publish' writes), groups the nodes into units as
'railyard fabric' does (nodes cabled to the same leaves: a scalable unit, a
rack), and writes each node's unit as a label: railyard.io/fabric-unit, or
fabric.topograph.run/tier-1 with --labels topograph. The value is the
unit's first leaf by name ("su2-leaf0", "rack7-tor"); a rail that went dark
counts with its last leaf, so a dead rail or leaf does not move a node out
of its unit. Leaf sets (the publisher's label) nest in units: a scheduler
can ask for one leaf set and fall back to one unit.

A node without the annotation loses the label; one whose annotation does
not decode keeps it. Only that label key is written. Run one writer per
cluster (the chart's fabric-units Deployment, one replica, with
fabric.units.enabled).`,
		Example: `  railyard fabric label-units --dry-run
  railyard fabric label-units --watch --interval 1m --labels topograph`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), s) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default in-cluster, KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&o.selector, "selector", "", "label selector of the nodes to read and label (default all)")
	fl.BoolVar(&o.watch, "watch", false, "label again every --interval until stopped")
	fl.DurationVar(&o.interval, "interval", time.Minute, "with --watch: time between two passes")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the changes as JSON instead of making them")
	o.keys.add(cmd, true)
	return cmd
}

func (o *labelUnitsOptions) validate() error {
	if o.watch && o.interval < minUnitInterval {
		return fmt.Errorf("--interval %s: want at least %s", o.interval, minUnitInterval)
	}
	if o.watch && o.dryRun {
		return errors.New("--watch and --dry-run are mutually exclusive")
	}
	return nil
}

// unitChange is one change as --dry-run prints it: unit "" removes the
// label.
type unitChange struct {
	Node string `json:"node"`
	Unit string `json:"unit"`
}

func (o *labelUnitsOptions) run(ctx context.Context, s iostreams.Streams) error {
	if err := o.validate(); err != nil {
		return err
	}
	keys, err := o.keys.resolve()
	if err != nil {
		return err
	}
	cs, err := client(o.kubeconfig)
	if err != nil {
		return err
	}
	l := nodefabric.UnitLabeler{Client: cs, Key: keys.Unit, Selector: o.selector}
	if o.dryRun {
		nodes, err := l.List(ctx)
		if err != nil {
			return err
		}
		changes, units, undecodable := nodefabric.UnitChanges(nodes, keys.Unit)
		out := struct {
			Key         string       `json:"key"`
			Nodes       int          `json:"nodes"`
			Units       int          `json:"units"`
			Changes     []unitChange `json:"changes"`
			Undecodable []string     `json:"undecodable,omitempty"`
		}{keys.Unit, len(nodes), units, []unitChange{}, undecodable}
		for _, c := range changes {
			u := ""
			if c.Value != nil {
				u = *c.Value
			}
			out.Changes = append(out.Changes, unitChange{Node: c.Node, Unit: u})
		}
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	report := func(p nodefabric.UnitPass, err error) {
		fmt.Fprintf(s.ErrOut, "railyard fabric label-units: %d nodes, %d units, %d labelled, %d unlabelled", p.Nodes, p.Units, len(p.Set), len(p.Removed))
		if len(p.Undecodable) > 0 {
			fmt.Fprintf(s.ErrOut, ", %d annotations that do not decode (left as they are)", len(p.Undecodable))
		}
		if err != nil {
			fmt.Fprintf(s.ErrOut, ": %v", err)
		}
		fmt.Fprintln(s.ErrOut)
	}
	if o.watch {
		nodefabric.RunUnits(ctx, l, o.interval, report)
		return nil
	}
	p, err := l.Once(ctx)
	report(p, err)
	return err
}
