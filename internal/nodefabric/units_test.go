package nodefabric

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/fabric"
)

// clusterOf makes a Node per generated node, annotated with its ports as
// its publisher would, with labels, annotations and finalizers of others.
func clusterOf(t *testing.T, l fabric.Layout) []runtime.Object {
	t.Helper()
	nodes, err := l.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var out []runtime.Object
	for _, n := range nodes {
		v, err := fabric.EncodePorts(n.Ports)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name,
			Labels:      map[string]string{"kubernetes.io/hostname": n.Name, "team": "a", fabric.LeafSetLabel: fabric.Labels(n.Ports)[fabric.LeafSetLabel]},
			Annotations: map[string]string{fabric.PortsAnnotation: v, "other": "kept"},
			Finalizers:  []string{"example.com/keep"}}})
	}
	return out
}

// patchedKeys returns, per patched node, the metadata a patch sent.
func patchedKeys(t *testing.T, actions []k8stesting.Action) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, a := range actions {
		p, ok := a.(k8stesting.PatchAction)
		if !ok {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal(p.GetPatch(), &doc); err != nil {
			t.Fatal(err)
		}
		out[p.GetName()] = doc
	}
	return out
}

// The unit writer labels every node of a generated cluster of four
// scalable units (of 8 nodes: fabric's own tests take SuperPOD-sized
// ones) with its unit through client-go's fake clientset and
// sends patches of that one key only: every other label, annotation and
// finalizer is as it was. A second pass sends nothing; a node whose
// annotation goes loses the label; one whose annotation does not decode
// keeps it; the topograph scheme's key is written the same way.
func TestUnitLabelerLabelsAFourUnitClusterFakeClientset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	layout := fabric.Layout{Design: fabric.RailOptimized, Nodes: 32, UnitNodes: 8, Rails: 8}
	objs := clusterOf(t, layout)
	cs := k8sfake.NewClientset(objs...)
	l := UnitLabeler{Client: cs, Key: fabric.UnitLabel}
	pass, err := l.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pass.Nodes != 32 || pass.Units != 4 || len(pass.Set) != 32 || len(pass.Removed) != 0 {
		t.Errorf("pass: %d nodes, %d units, %d set, %d removed; want 32, 4, 32, 0", pass.Nodes, pass.Units, len(pass.Set), len(pass.Removed))
	}
	for i, o := range objs {
		before := o.(*corev1.Node)
		after, err := cs.CoreV1().Nodes().Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := before.DeepCopy()
		want.Labels[fabric.UnitLabel] = fmt.Sprintf("su%d-leaf0", layout.Unit(i)+1)
		owned := `{"f:metadata":{"f:labels":{"f:` + fabric.UnitLabel + `":{}}}}`
		if m := after.ManagedFields; len(m) != 1 || m[0].Manager != UnitFieldManager || m[0].FieldsV1.GetRawString() != owned {
			t.Fatalf("node %s: managed fields %+v; want %s owning %s only", before.Name, m, UnitFieldManager, owned)
		}
		after.ManagedFields = nil
		if diff := cmp.Diff(want.ObjectMeta, after.ObjectMeta); diff != "" {
			t.Fatalf("node %s (-want +got):\n%s", before.Name, diff)
		}
	}
	for node, doc := range patchedKeys(t, cs.Actions()) {
		want := map[string]any{"metadata": map[string]any{"labels": map[string]any{fabric.UnitLabel: fmt.Sprintf("su%s-leaf0", node[2:3])}}}
		if diff := cmp.Diff(want, doc); diff != "" {
			t.Fatalf("patch of %s (-want +got):\n%s", node, diff)
		}
	}

	cs.ClearActions()
	if pass, err := l.Once(ctx); err != nil || len(pass.Set)+len(pass.Removed) != 0 {
		t.Errorf("second pass: %+v, %v; want no change", pass, err)
	}
	if got := patchedKeys(t, cs.Actions()); len(got) != 0 {
		t.Errorf("an unchanged pass patched %d nodes", len(got))
	}

	// su2-node03 loses its annotation (its publisher is gone); su3-node01's
	// becomes garbage.
	patch := func(node, p string) {
		t.Helper()
		if _, err := cs.CoreV1().Nodes().Patch(ctx, node, "application/merge-patch+json", []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch("su2-node03", `{"metadata":{"annotations":{"`+fabric.PortsAnnotation+`":null}}}`)
	patch("su3-node01", `{"metadata":{"annotations":{"`+fabric.PortsAnnotation+`":"{"}}}`)
	cs.ClearActions()
	pass, err = l.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(UnitPass{Nodes: 32, Units: 4, Removed: []string{"su2-node03"}, Undecodable: []string{"su3-node01"}}, pass); diff != "" {
		t.Errorf("after an annotation went and one broke (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"su2-node03": "", "su3-node01": "su3-leaf0"} {
		n, _ := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if got := n.Labels[fabric.UnitLabel]; got != want {
			t.Errorf("%s: unit label %q, want %q", name, got, want)
		}
	}

	keys, _ := fabric.SchemeKeys(fabric.SchemeTopograph)
	tg := k8sfake.NewClientset(clusterOf(t, fabric.Layout{Design: fabric.RailOptimized, Nodes: 8, UnitNodes: 2, Rails: 8})...)
	if _, err := (UnitLabeler{Client: tg, Key: keys.Unit}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ := tg.CoreV1().Nodes().Get(ctx, "su4-node01", metav1.GetOptions{})
	if n.Labels[fabric.TopographTier1] != "su4-leaf0" || n.Labels[fabric.UnitLabel] != "" {
		t.Errorf("topograph scheme: labels %v; want tier-1 su4-leaf0 only", n.Labels)
	}
}

func TestUnitLabelerNeedsAKey(t *testing.T) {
	t.Parallel()
	if _, err := (UnitLabeler{}).Once(context.Background()); err == nil {
		t.Error("a labeler without a key ran")
	}
}
