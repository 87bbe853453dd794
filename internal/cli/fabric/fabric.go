package fabric

import (
	"context"
	"encoding/json"
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
)

// ExitError carries the exit status: 1 warnings, 2 failures (as doctor).
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	if e.Code == 1 {
		return "the fabric has warnings"
	}
	return "the fabric is miswired"
}

// ExitCode is the code the process exits with.
func (e *ExitError) ExitCode() int { return e.Code }

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
		Long: `fabric reads the ports each Railyard agent publishes on its Node (the
railyard.io/fabric-ports annotation: every RDMA NIC port's rail and the LLDP
neighbor heard on it) and prints the rail x node wiring matrix, each rail's
leaf (the switch most nodes reach on it), and findings:

  fail  a NIC cabled to another rail's leaf (a swapped cable)
  fail  a NIC with no neighbor while its peers on the rail have one
  warn  a node on a leaf none of its peers on that rail use
  warn  mixed link rates or MTUs on one rail
  warn  a NIC whose firmware differs from the release most NICs of its
        model (PCI vendor:device) run across the nodes

Exit status: 0 nothing wrong, 1 warnings, 2 failures. Nodes without the
annotation (no agent, or an agent without neighbors) are listed and skipped.`,
		Example: `  railyard fabric
  railyard fabric --selector node-role.kubernetes.io/gpu= --json | jq '.findings'
  railyard fabric --from nodes.json     # a saved list of {"name":..., "ports":[...]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var nodes []fabric.Node
			var skipped []string
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
			}
			if err != nil {
				return fmt.Errorf("writing the report: %w", err)
			}
			if st := rep.Status(); st != 0 {
				return &ExitError{Code: st}
			}
			return nil
		},
	}
	cmd.AddCommand(newPublishCommand(s))
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
func listNodes(ctx context.Context, kubeconfig, selector string) (nodes []fabric.Node, skipped []string, err error) {
	cs, err := client(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	return clusterNodes(ctx, cs, selector)
}

// clusterNodes reads every selected node's ports annotation; nodes without
// one are returned by name in skipped.
func clusterNodes(ctx context.Context, cs kubernetes.Interface, selector string) (nodes []fabric.Node, skipped []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range list.Items {
		v, ok := n.Annotations[fabric.PortsAnnotation]
		if !ok {
			skipped = append(skipped, n.Name)
			continue
		}
		ports, err := fabric.DecodePorts(v)
		if err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		nodes = append(nodes, fabric.Node{Name: n.Name, Ports: ports})
	}
	sort.Strings(skipped)
	return nodes, skipped, nil
}

func writeJSON(w io.Writer, rep fabric.Report, skipped []string) error {
	if rep.Findings == nil {
		rep.Findings = []fabric.Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		fabric.Report
		Skipped []string `json:"skipped,omitempty"`
	}{rep, skipped})
}

// writeTable prints one row per node and one column per rail (a cluster
// has far more nodes than rails), each rail's leaf above, then findings.
func writeTable(w io.Writer, rep fabric.Report, skipped []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"NODE"}
	leaves := []string{"(leaf)"}
	for _, r := range rep.Rails {
		head = append(head, fmt.Sprintf("RAIL %d", r.Index))
		leaves = append(leaves, dash(r.Leaf))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fmt.Fprintln(tw, strings.Join(leaves, "\t"))
	for i, n := range rep.Nodes {
		row := []string{n}
		for _, r := range rep.Rails {
			cell := r.Switches[i]
			switch {
			case cell == "":
				cell = "(none)"
			case cell != "-" && cell != r.Leaf:
				cell += " !"
			}
			row = append(row, cell)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Isolated {
		fmt.Fprintln(w, "\nRails are isolated (one leaf per rail): a job's pods must use the same rails on every node")
		fmt.Fprintln(w, "(railyard rails template), and NCCL must keep each ring on one rail: set the agent's ncclCrossNIC: 0")
		fmt.Fprintln(w, "(chart: --set config.ncclCrossNIC=0) unless a spine joins the leaves at full rate.")
	} else {
		fmt.Fprintln(w, "\nSome leaf serves several rails: traffic between rails does not need the spine there;")
		fmt.Fprintln(w, "NCCL_CROSS_NIC can stay NCCL's default (leave ncclCrossNIC unset).")
	}
	if len(skipped) > 0 {
		fmt.Fprintf(w, "Not reporting (no %s annotation): %s\n", fabric.PortsAnnotation, strings.Join(skipped, ", "))
	}
	if len(rep.Findings) == 0 {
		_, err := fmt.Fprintln(w, "No findings.")
		return err
	}
	fmt.Fprintln(w, "\nFindings:")
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %-4s  %s: %s\n        fix: %s\n", strings.ToUpper(f.Severity.String()), f.Node, f.Message, f.Fix)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
