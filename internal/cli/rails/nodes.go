package rails

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/railyard-io/railyard/internal/schedtopo"
)

// readNodes reads a List of Nodes (kubectl get nodes -o json|yaml) and
// keeps those selector matches.
func readNodes(path string, selector labels.Selector) ([]schedtopo.Node, error) {
	var out []schedtopo.Node
	err := readList(path, "Nodes", func(kind string, item []byte) error {
		if kind != "Node" {
			return nil
		}
		var n metav1.PartialObjectMetadata
		if err := json.Unmarshal(item, &n); err != nil {
			return err
		}
		if selector.Matches(labels.Set(n.Labels)) {
			out = append(out, schedtopo.Node{Name: n.Name, Labels: n.Labels})
		}
		return nil
	})
	return out, err
}

// listNodes lists the cluster's nodes that selector matches.
func listNodes(ctx context.Context, connect connectFunc, kubeconfig string, selector labels.Selector) ([]schedtopo.Node, error) {
	cs, err := connect(kubeconfig, requestTimeout)
	if err != nil {
		return nil, err
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make([]schedtopo.Node, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, schedtopo.Node{Name: n.Name, Labels: n.Labels})
	}
	return out, nil
}
