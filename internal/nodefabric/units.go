package nodefabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/fabric"
)

// UnitFieldManager is the field manager of the unit writer's patches.
const UnitFieldManager = "railyard-fabric-units"

// listPage bounds one page of the node list.
const listPage = 500

// UnitLabeler writes every node's unit label from all nodes' ports
// annotations (fabric.UnitLabels): the cluster's one writer of that key,
// since a node's unit needs every node's view. It patches only that key:
// never another label, an annotation or the spec.
type UnitLabeler struct {
	Client kubernetes.Interface
	// Key is the unit label's key (fabric.UnitLabel, or the scheme's).
	Key string
	// Selector limits the nodes read and labelled ("": all).
	Selector string
}

// UnitPass is what one pass did.
type UnitPass struct {
	// Nodes is how many nodes were read; Units how many distinct units
	// they were given.
	Nodes, Units int
	// Set and Removed name the nodes whose label was set or removed.
	Set, Removed []string
	// Undecodable names the nodes whose annotation does not decode: their
	// label is left as it is.
	Undecodable []string
}

// UnitChange is one node's label change: Value nil removes the label.
type UnitChange struct {
	Node  string
	Value *string
}

// UnitChanges is the pure part of a pass: from the listed nodes, each
// node's wanted unit label under key (fabric.UnitLabels over the nodes'
// ports annotations) against the one it has, and the changes that make
// them agree. A node without the annotation wants none (a label it has is
// removed); a node whose annotation does not decode is left out of the
// units and keeps its label (listed in undecodable).
func UnitChanges(nodes []corev1.Node, key string) (changes []UnitChange, units int, undecodable []string) {
	var ports []fabric.Node
	skip := map[string]bool{}
	for _, n := range nodes {
		v, ok := n.Annotations[fabric.PortsAnnotation]
		if !ok {
			continue
		}
		p, err := fabric.DecodePorts(v)
		if err != nil {
			skip[n.Name] = true
			undecodable = append(undecodable, n.Name)
			continue
		}
		ports = append(ports, fabric.Node{Name: n.Name, Ports: p})
	}
	want := fabric.UnitLabels(ports)
	distinct := map[string]bool{}
	for _, v := range want {
		distinct[v] = true
	}
	for _, n := range nodes {
		if skip[n.Name] {
			continue
		}
		cur, has := n.Labels[key]
		w, ok := want[n.Name]
		switch {
		case ok && (!has || cur != w):
			changes = append(changes, UnitChange{Node: n.Name, Value: &w})
		case !ok && has:
			changes = append(changes, UnitChange{Node: n.Name})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Node < changes[j].Node })
	sort.Strings(undecodable)
	return changes, len(distinct), undecodable
}

// Once lists the nodes, computes their units and patches each node whose
// unit label differs (a JSON merge patch of that one key). A node that
// fails to patch does not stop the others; the errors are joined.
func (l UnitLabeler) Once(ctx context.Context) (UnitPass, error) {
	var pass UnitPass
	if l.Key == "" {
		return pass, errors.New("unit labeler: no label key")
	}
	nodes, err := l.List(ctx)
	if err != nil {
		return pass, err
	}
	pass.Nodes = len(nodes)
	changes, units, undecodable := UnitChanges(nodes, l.Key)
	pass.Units, pass.Undecodable = units, undecodable
	var errs []error
	for _, c := range changes {
		var value any // nil: a JSON merge patch removes a key set to null
		if c.Value != nil {
			value = *c.Value
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{l.Key: value}}})
		if err != nil {
			return pass, fmt.Errorf("encoding the node patch: %w", err)
		}
		if _, err := l.Client.CoreV1().Nodes().Patch(ctx, c.Node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: UnitFieldManager}); err != nil {
			errs = append(errs, fmt.Errorf("labelling node %s: %w", c.Node, err))
			continue
		}
		if c.Value != nil {
			pass.Set = append(pass.Set, c.Node)
		} else {
			pass.Removed = append(pass.Removed, c.Node)
		}
	}
	return pass, errors.Join(errs...)
}

// List reads the selected nodes, a page at a time.
func (l UnitLabeler) List(ctx context.Context) ([]corev1.Node, error) {
	var out []corev1.Node
	opts := metav1.ListOptions{LabelSelector: l.Selector, Limit: listPage}
	for {
		page, err := l.Client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// RunUnits calls l.Once now and then every interval until ctx ends,
// reporting each pass (report may be nil); a failed pass is retried at
// the next.
func RunUnits(ctx context.Context, l UnitLabeler, interval time.Duration, report func(UnitPass, error)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pass, err := l.Once(ctx)
		if ctx.Err() != nil {
			return
		}
		if report != nil {
			report(pass, err)
		}
		t.Reset(interval)
	}
}
