package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// maxFile bounds a --from file: 64 KiB of ports for each of 10,000 nodes
// would be far more; 256 MiB is the ceiling.
const maxFile = 256 << 20

// requestTimeout bounds the one API request (listing the nodes).
const requestTimeout = 30 * time.Second

// NewCommand returns the `railyard fabric` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	var kubeconfig, selector, from string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "fabric [--kubeconfig FILE] [--selector LABELS] [--from FILE] [--json]",
		Short: "Show which leaf switch each node's NIC of each rail is cabled to, and find miswiring",
		Long: `fabric reads the ports each node's fabric publisher (railyard fabric publish,
the chart's fabric DaemonSet) writes on its Node (the
railyard.io/fabric-ports annotation: every RDMA NIC port's rail and the LLDP
neighbor, or InfiniBand switch GUID, heard on it), learns the fabric's units
(nodes cabled to the same leaves: a scalable unit of a rail-optimized
cluster, or a rack) and its design (rail-optimized, top-of-rack or mixed),
prints the rail x node wiring matrix with each node's unit, each unit's leaf
per rail, and findings, each judged inside the node's own unit:

  fail  two NICs of a node cabled to each other's rail leaf (a swap), or
        three or more in a circle (a rotation)
  fail  a NIC cabled to another rail's leaf of its unit
  fail  a NIC with no neighbor while its unit's peers on the rail have one,
        or a node with no neighbor on any rail
  warn  a NIC cabled to a leaf of another unit (fail: of another rail there)
  warn  a NIC on a switch no peer on its rail uses
  warn  a rail-optimized unit whose rail shares another rail's leaf
  warn  a unit's rail on which no node hears a neighbor
  warn  a NIC that hears several neighbors
  warn  mixed link rates or MTUs on one rail of a unit
  warn  a NIC whose firmware differs from the release most NICs of its
        model (PCI vendor:device) run across the nodes
  warn  no port of any node has a neighbor: nothing is judged

Exit status: 0 nothing wrong, 1 warnings, 2 failures. Nodes without the
annotation (no agent, or an agent without neighbors) are listed and skipped;
so are nodes whose annotation does not decode (garbage, too large, a field
from a newer publisher), each with the reason, while the rest is judged.
Names read from the cluster are printed with terminal control characters
escaped (--json leaves them to the JSON encoding).`,
		Example: `  railyard fabric
  railyard fabric --selector node-role.kubernetes.io/gpu= --json | jq '.findings'
  railyard fabric --from nodes.json     # a saved list of {"name":..., "ports":[...]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var nodes []fabric.Node
			var skipped skippedNodes
			var err error
			if from != "" {
				nodes, err = readFile(from)
			} else {
				nodes, skipped, err = listNodes(cmd.Context(), kubeconfig, selector)
			}
			if err != nil {
				return err
			}
			if len(nodes) == 0 {
				return fmt.Errorf("no node publishes its fabric ports (annotation %s): is the Railyard agent running with neighbor discovery?", fabric.PortsAnnotation)
			}
			rep := fabric.Analyze(nodes)
			if jsonOut {
				err = writeJSON(s.Out, rep, skipped)
			} else {
				err = writeTable(s.Out, rep, skipped)
				if err == nil {
					err = writeHeld(s.Out, nodes)
				}
			}
			if err != nil {
				return fmt.Errorf("writing the report: %w", err)
			}
			if st := rep.Status(); st != 0 {
				why := errors.New("the fabric is miswired")
				if st == 1 {
					why = errors.New("the fabric has warnings")
				}
				return &iostreams.ExitError{Code: st, Err: why}
			}
			return nil
		},
	}
	cmd.AddCommand(newPublishCommand(s), newLabelUnitsCommand(s))
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&selector, "selector", "", "label selector of the nodes to compare (default all)")
	fl.StringVar(&from, "from", "", "read the nodes from a JSON file ([{\"name\":...,\"ports\":[...]}]) instead of the cluster")
	fl.BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func readFile(path string) ([]fabric.Node, error) {
	b, err := inputfile.Read(path, maxFile)
	if err != nil {
		return nil, err
	}
	var nodes []fabric.Node
	if err := json.Unmarshal(b, &nodes); err != nil {
		return nil, fmt.Errorf("%s: want a JSON list of nodes: %w", path, err)
	}
	return nodes, nil
}

// listNodes connects with the user's kubeconfig and reads the nodes.
func listNodes(ctx context.Context, kubeconfig, selector string) (nodes []fabric.Node, skipped skippedNodes, err error) {
	cs, err := client(kubeconfig)
	if err != nil {
		return nil, skipped, err
	}
	return clusterNodes(ctx, cs, selector)
}

// skippedNodes are the selected nodes left out of the report: without the
// annotation, or with one that does not decode (by node, its error).
type skippedNodes struct {
	Unannotated []string
	NotDecoded  []notDecoded
}

// notDecoded is a node whose annotation does not decode, and why.
type notDecoded struct {
	Node  string `json:"node"`
	Error string `json:"error"`
}

// clusterNodes reads every selected node's ports annotation. Nodes without
// one, and nodes whose annotation does not decode (a newer publisher's
// field, garbage, too large), are returned in skipped: one node's bad
// annotation never stops the rest from being judged.
func clusterNodes(ctx context.Context, cs kubernetes.Interface, selector string) (nodes []fabric.Node, skipped skippedNodes, err error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, skipped, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range list.Items {
		v, ok := n.Annotations[fabric.PortsAnnotation]
		if !ok {
			skipped.Unannotated = append(skipped.Unannotated, n.Name)
			continue
		}
		ports, err := fabric.DecodePorts(v)
		if err != nil {
			skipped.NotDecoded = append(skipped.NotDecoded, notDecoded{Node: n.Name, Error: err.Error()})
			continue
		}
		nodes = append(nodes, fabric.Node{Name: n.Name, Ports: ports})
	}
	sort.Strings(skipped.Unannotated)
	sort.Slice(skipped.NotDecoded, func(i, j int) bool { return skipped.NotDecoded[i].Node < skipped.NotDecoded[j].Node })
	return nodes, skipped, nil
}

func writeJSON(w io.Writer, rep fabric.Report, skipped skippedNodes) error {
	if rep.Findings == nil {
		rep.Findings = []fabric.Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		fabric.Report
		Skipped    []string     `json:"skipped,omitempty"`
		NotDecoded []notDecoded `json:"notDecoded,omitempty"`
	}{rep, skipped.Unannotated, skipped.NotDecoded})
}

// writeTable prints one row per node and one column per rail (a cluster
// has far more nodes than rails) with the node's unit, the leaf of each
// rail above when there is one unit, else a table of the units; then the
// design's advice and the findings. Every name and message read from the
// cluster is escaped.
func writeTable(w io.Writer, rep fabric.Report, skipped skippedNodes) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"NODE", "UNIT"}
	leaves := []string{"(leaf)", ""}
	for _, r := range rep.Rails {
		head = append(head, fmt.Sprintf("RAIL %d", r.Index))
		leaves = append(leaves, dash(termsafe.Escape(r.Leaf)))
	}
	row(tw, head)
	if len(rep.Units) <= 1 {
		row(tw, leaves)
	}
	unitOf, leafOf := unitLeaves(rep)
	for i, n := range rep.Nodes {
		u, ok := unitOf[n]
		cells := []string{termsafe.Escape(n), "-"}
		if ok {
			cells[1] = fmt.Sprint(rep.Units[u].Index)
		}
		for _, r := range rep.Rails {
			cell := r.Switches[i]
			switch {
			case cell == "":
				cell = "(none)"
			case cell != "-" && (!ok || cell != leafOf[u][r.Index]):
				cell = termsafe.Escape(cell) + " !"
			default:
				cell = termsafe.Escape(cell)
			}
			cells = append(cells, cell)
		}
		row(tw, cells)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Units) > 1 {
		if err := writeUnits(w, rep); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, advice(rep))
	if len(skipped.Unannotated) > 0 {
		fmt.Fprintf(w, "Not reporting (no %s annotation): %s\n", fabric.PortsAnnotation, termsafe.Escape(strings.Join(skipped.Unannotated, ", ")))
	}
	for _, n := range skipped.NotDecoded {
		fmt.Fprintf(w, "Not reporting %s: its %s annotation does not decode (%s)\n", termsafe.Escape(n.Node), fabric.PortsAnnotation, termsafe.Escape(n.Error))
	}
	if len(rep.Findings) == 0 {
		_, err := fmt.Fprintln(w, "No findings.")
		return err
	}
	fmt.Fprintln(w, "\nFindings:")
	for _, f := range rep.Findings {
		about := f.Node
		if about == "" {
			about = "cluster"
		}
		fmt.Fprintf(w, "  %-4s  %s: %s\n        fix: %s\n", strings.ToUpper(f.Severity.String()), termsafe.Escape(about), termsafe.Escape(f.Message), termsafe.Escape(f.Fix))
	}
	return nil
}

// row writes one tab-separated row.
func row(w io.Writer, cells []string) { fmt.Fprintln(w, strings.Join(cells, "\t")) }

// unitLeaves maps each node to its unit (an index into rep.Units) and
// each unit's rails to their leaves.
func unitLeaves(rep fabric.Report) (map[string]int, []map[int]string) {
	unitOf := map[string]int{}
	leafOf := make([]map[int]string, len(rep.Units))
	for u, unit := range rep.Units {
		for _, n := range unit.Nodes {
			unitOf[n] = u
		}
		leafOf[u] = map[int]string{}
		for _, r := range unit.Rails {
			leafOf[u][r.Index] = r.Leaf
		}
	}
	return unitOf, leafOf
}

// writeUnits prints one row per unit: its design, size, first node and
// leaf per rail.
func writeUnits(w io.Writer, rep fabric.Report) error {
	fmt.Fprintf(w, "\n%d units (%s):\n", len(rep.Units), rep.Design)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"UNIT", "DESIGN", "NODES", "FIRST NODE"}
	for _, r := range rep.Rails {
		head = append(head, fmt.Sprintf("RAIL %d", r.Index))
	}
	row(tw, head)
	_, leafOf := unitLeaves(rep)
	for u, unit := range rep.Units {
		cells := []string{fmt.Sprint(unit.Index), string(unit.Design), fmt.Sprint(len(unit.Nodes)), "-"}
		if len(unit.Nodes) > 0 {
			cells[3] = termsafe.Escape(unit.Nodes[0])
		}
		for _, r := range rep.Rails {
			leaf, ok := leafOf[u][r.Index]
			if !ok {
				leaf = "-"
			}
			cells = append(cells, dash(termsafe.Escape(leaf)))
		}
		row(tw, cells)
	}
	return tw.Flush()
}

// advice is what the design means for NCCL; none when no port has a
// neighbor.
func advice(rep fabric.Report) string {
	switch {
	case rep.Design == fabric.Unknown:
		return "No port reports a neighbor: the units, the design and the rails cannot be judged."
	case rep.Isolated:
		return "Rails are isolated (one leaf per rail" + perUnit(rep) + "): a job's pods must use the same rails on every node\n" +
			"(railyard rails template), and NCCL must keep each ring on one rail: set the agent's ncclCrossNIC: 0\n" +
			"(chart: --set config.ncclCrossNIC=0) unless a spine joins the leaves at full rate."
	case rep.Design == fabric.TopOfRack:
		return "Top of rack: each unit's switch takes every rail of its nodes, so traffic between rails needs no spine\n" +
			"inside a rack; NCCL_CROSS_NIC can stay NCCL's default (leave ncclCrossNIC unset)."
	case rep.Design == fabric.Mixed && len(rep.Units) > 1:
		return "The units differ in design (see the units above): keep a job's pods inside one unit, and judge\n" +
			"ncclCrossNIC by the units the jobs run in (0 where rails have leaves of their own)."
	default:
		return "Some leaf serves several rails: traffic between rails does not need the spine there;\n" +
			"NCCL_CROSS_NIC can stay NCCL's default (leave ncclCrossNIC unset)."
	}
}

func perUnit(rep fabric.Report) string {
	if len(rep.Units) > 1 {
		return fmt.Sprintf(" in each of %d units", len(rep.Units))
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
