//go:build e2e

package multinode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/schedtopo"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// kueueModule is the Go module whose CRDs the Kueue test serves; its
// version is pinned by the helper module hack/cluster/kueuecrds.
const kueueModule = "sigs.k8s.io/kueue"

// kueueCRDFiles are the CRDs `railyard rails scheduler kueue`'s objects
// need, in the module's config/components/crd/bases.
var kueueCRDFiles = map[string]string{
	"topologies.kueue.x-k8s.io":      "kueue.x-k8s.io_topologies.yaml",
	"resourceflavors.kueue.x-k8s.io": "kueue.x-k8s.io_resourceflavors.yaml",
}

var (
	kueueTopologies = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "topologies"}
	kueueFlavors    = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	crdResource     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// TestRailsSchedulerKueueObjectsPassKueueCRDValidation: Kueue's own API
// accepts what `railyard rails scheduler kueue` prints. Kueue's real
// Topology and ResourceFlavor CRDs (the pinned sigs.k8s.io/kueue module's,
// OpenAPI schema and CEL rules as released) are served by the cluster's
// real kube-apiserver; the GPU nodes carry a unit label and two leaf-set
// values (written by the test: a STAND-IN for `railyard fabric
// label-units` and `railyard fabric publish`); the real railyard binary
// reads them from the cluster; its Topology and ResourceFlavor are created
// at kueue.x-k8s.io/v1beta2 and read back with nothing pruned: levels the
// unit, the leaf set and the hostname in that order, the flavor naming the
// Topology and selecting exactly the GPU nodes, each carrying every level.
// Then objects the CRDs refuse are refused (a duplicated level, the
// hostname above a level, a flavor with a topology and no node label, a
// changed level list), so the check can fail. Kueue's controller is NOT
// run: this proves the API accepts the objects, not that Kueue schedules
// by them.
func TestRailsSchedulerKueueObjectsPassKueueCRDValidation(t *testing.T) {
	c := mc(t)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	ctx := framework.Context(t, time.Minute)
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	version := installKueueCRDs(ctx, t, dyn)

	leafSets := map[string]string{gpus[0].Name: "ls-a", gpus[1].Name: "ls-b"}
	for _, n := range gpus {
		labelNode(ctx, t, c, n.Name, fabric.UnitLabel, "unit-a")
		ls, ok := leafSets[n.Name]
		if !ok {
			ls = "ls-b"
		}
		labelNode(ctx, t, c, n.Name, fabric.LeafSetLabel, ls)
	}

	const flavorLabel = "railyard.io/rdma=true"
	cmd := exec.CommandContext(ctx, railyardBin(t), "rails", "scheduler", "kueue", "--name", "e2e-fabric", "--flavor", "e2e-gpu",
		"-l", flavorLabel, "--node-label", flavorLabel, "--kubeconfig", c.Kubeconfig)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("railyard rails scheduler kueue: %v\n%s", err, stderr.String())
	}
	t.Logf("railyard rails scheduler kueue: %s", strings.TrimSpace(stderr.String()))
	if want := fmt.Sprintf("%d nodes: 2 leaf sets", len(gpus)); !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q (the labels the test wrote)", stderr.String(), want)
	}
	objs, err := framework.DecodeObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "Topology" || objs[1].GetKind() != "ResourceFlavor" {
		t.Fatalf("railyard printed %d objects, want a Topology and a ResourceFlavor:\n%s", len(objs), out)
	}
	topo, flavor := objs[0], objs[1]
	for _, o := range objs {
		if o.GetAPIVersion() != schedtopo.KueueAPIVersion {
			t.Fatalf("%s %s: apiVersion %s, want %s", o.GetKind(), o.GetName(), o.GetAPIVersion(), schedtopo.KueueAPIVersion)
		}
	}

	kept := createKept(ctx, t, dyn, kueueTopologies, topo)
	gotLevels := topologyLevels(t, kept)
	wantLevels := []string{fabric.UnitLabel, fabric.LeafSetLabel, corev1.LabelHostname}
	if !reflect.DeepEqual(gotLevels, wantLevels) {
		t.Errorf("Topology %s as the API server keeps it: levels %v, want %v", kept.GetName(), gotLevels, wantLevels)
	}
	keptFlavor := createKept(ctx, t, dyn, kueueFlavors, flavor)
	if name, _, _ := unstructured.NestedString(keptFlavor.Object, "spec", "topologyName"); name != kept.GetName() {
		t.Errorf("ResourceFlavor %s: topologyName %q, want the Topology's %q", keptFlavor.GetName(), name, kept.GetName())
	}
	sel, _, _ := unstructured.NestedStringMap(keptFlavor.Object, "spec", "nodeLabels")
	if want := map[string]string{"railyard.io/rdma": "true"}; !reflect.DeepEqual(sel, want) {
		t.Errorf("ResourceFlavor %s: nodeLabels %v, want %v", keptFlavor.GetName(), sel, want)
	}
	// The nodes Kueue would build the topology from: those the flavor's
	// labels select, each with a value at every level (Kueue leaves out a
	// node lacking one).
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != len(gpus) {
		t.Errorf("the flavor's node labels %v select %d nodes, want the %d GPU nodes", sel, len(nodes.Items), len(gpus))
	}
	for _, n := range nodes.Items {
		for _, key := range gotLevels {
			if n.Labels[key] == "" {
				t.Errorf("node %s selected by the flavor has no %s: Kueue would leave it out", n.Name, key)
			}
		}
	}

	// The same CRDs refuse what Kueue's API does not take.
	for _, bad := range []struct {
		name, why string
		res       schema.GroupVersionResource
		obj       *unstructured.Unstructured
		msg       string
	}{
		{"dup", "a level twice", kueueTopologies, withLevels(topo, "e2e-dup", fabric.LeafSetLabel, fabric.LeafSetLabel, corev1.LabelHostname), "must be unique"},
		{"host", "the hostname above the leaf set", kueueTopologies, withLevels(topo, "e2e-host", corev1.LabelHostname, fabric.LeafSetLabel),
			"the kubernetes.io/hostname label can only be used at the lowest level of topology"},
		{"key", "a level key no label can have", kueueTopologies, withLevels(topo, "e2e-key", "railyard.io/leaf set"), "spec.levels[0].nodeLabel"},
		{"flavor", "a flavor with a topology and no node label", kueueFlavors, withNodeLabels(flavor, "e2e-nolabels"),
			"at least one nodeLabel is required when topology is set"},
	} {
		_, err := dyn.Resource(bad.res).Create(ctx, bad.obj, metav1.CreateOptions{})
		if err == nil {
			_ = dyn.Resource(bad.res).Delete(context.Background(), bad.obj.GetName(), metav1.DeleteOptions{})
			t.Errorf("%s (%s): created, want Kueue %s's CRD to refuse it", bad.name, bad.why, version)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s (%s): %v, want Invalid with %q", bad.name, bad.why, err, bad.msg)
			continue
		}
		t.Logf("%s (%s) refused: %v", bad.name, bad.why, err)
	}
	// A Topology's levels are immutable: applying a Topology from other
	// label keys over this one is refused (delete it first).
	kept.Object["spec"] = map[string]any{"levels": []any{map[string]any{"nodeLabel": fabric.TopographTier0}, map[string]any{"nodeLabel": corev1.LabelHostname}}}
	if _, err := dyn.Resource(kueueTopologies).Update(ctx, kept, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), "field is immutable") {
		t.Errorf("changing Topology %s's levels: %v, want Invalid with \"field is immutable\"", kept.GetName(), err)
	}
}

// installKueueCRDs creates Kueue's Topology and ResourceFlavor CRDs from
// the module hack/cluster/kueuecrds pins, waits until both are
// Established, deletes them when the test ends, and returns the version.
func installKueueCRDs(ctx context.Context, t *testing.T, dyn dynamic.Interface) string {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// go mod download, not go list -m: a machine that has never fetched the
	// module (a new one) gets it, where go list -m names no directory.
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", kueueModule)
	cmd.Dir = filepath.Join(repo, "hack/cluster/kueuecrds")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("fetching %s (hack/cluster/kueuecrds): %v %s %s", kueueModule, err, errText(err), b)
	}
	var mod struct{ Dir, Version, Error string }
	if err := json.Unmarshal(b, &mod); err != nil || mod.Dir == "" || mod.Error != "" {
		t.Fatalf("go mod download %s: %q (%v)", kueueModule, b, err)
	}
	dir, version := mod.Dir, mod.Version
	crds := dyn.Resource(crdResource)
	for name, file := range kueueCRDFiles {
		data, err := os.ReadFile(filepath.Join(dir, "config/components/crd/bases", file))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := framework.DecodeObjects(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 || objs[0].GetName() != name {
			t.Fatalf("%s: %d objects, want the CRD %s", file, len(objs), name)
		}
		if _, err := crds.Create(ctx, objs[0], metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Kueue %s's CRD %s: %v", version, name, err)
		}
		t.Cleanup(func() { deleteCRD(t, crds, name) })
	}
	for name := range kueueCRDFiles {
		poll(ctx, t, "CRD "+name+" established", func(ctx context.Context) (bool, string) {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				if m, _ := cond.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, ""
				}
			}
			return false, fmt.Sprint(conds)
		})
	}
	t.Logf("Kueue %s's Topology and ResourceFlavor CRDs served (%s)", version, dir)
	return version
}

// deleteCRD deletes a CRD and waits (bounded) until it is gone, with the
// objects of its kind.
func deleteCRD(t *testing.T, crds dynamic.ResourceInterface, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := crds.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting CRD %s: %v", name, err)
		return
	}
	for {
		if _, err := crds.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("CRD %s not gone within 30s", name)
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// createKept creates obj and returns it as the API server keeps it (read
// back), failing the test if the server changed its spec (a field pruned
// as unknown, a value defaulted over).
func createKept(ctx context.Context, t *testing.T, dyn dynamic.Interface, res schema.GroupVersionResource, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if _, err := dyn.Resource(res).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the %s %s railyard printed: %v", obj.GetKind(), obj.GetName(), err)
	}
	t.Cleanup(func() { _ = dyn.Resource(res).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
	got, err := dyn.Resource(res).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Object["spec"], obj.Object["spec"]) {
		t.Errorf("%s %s: sent spec %v, the API server keeps %v", obj.GetKind(), obj.GetName(), obj.Object["spec"], got.Object["spec"])
	}
	if !reflect.DeepEqual(got.GetLabels(), obj.GetLabels()) {
		t.Errorf("%s %s: sent labels %v, kept %v", obj.GetKind(), obj.GetName(), obj.GetLabels(), got.GetLabels())
	}
	return got
}

// topologyLevels is a Topology's spec.levels[].nodeLabel in order.
func topologyLevels(t *testing.T, topo *unstructured.Unstructured) []string {
	t.Helper()
	levels, _, err := unstructured.NestedSlice(topo.Object, "spec", "levels")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range levels {
		m, _ := l.(map[string]any)
		k, _ := m["nodeLabel"].(string)
		keys = append(keys, k)
	}
	return keys
}

// withLevels is a copy of topo named name with these level keys.
func withLevels(topo *unstructured.Unstructured, name string, keys ...string) *unstructured.Unstructured {
	o := topo.DeepCopy()
	o.SetName(name)
	levels := make([]any, 0, len(keys))
	for _, k := range keys {
		levels = append(levels, map[string]any{"nodeLabel": k})
	}
	o.Object["spec"] = map[string]any{"levels": levels}
	return o
}

// withNodeLabels is a copy of flavor named name whose nodeLabels is empty
// (its topologyName kept).
func withNodeLabels(flavor *unstructured.Unstructured, name string) *unstructured.Unstructured {
	o := flavor.DeepCopy()
	o.SetName(name)
	_ = unstructured.SetNestedStringMap(o.Object, map[string]string{}, "spec", "nodeLabels")
	return o
}

// errText is an exec error's stderr, if it has one.
func errText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
