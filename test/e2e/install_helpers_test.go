//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/internal/image"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// buildAndImport builds the image as `make images` does, tagged with the
// given version, and imports it into the node's containerd with ctr.
func buildAndImport(ctx context.Context, t *testing.T, c *framework.Cluster, repo, dir, version string) image.Result {
	t.Helper()
	start := time.Now()
	archive := filepath.Join(dir, "railyard-"+version+".tar")
	name := installRepo + ":" + version
	res, err := image.Build(ctx, image.Options{
		Dir: repo, Packages: image.DefaultPackages(), Arch: "amd64", Version: version, Revision: "e2e",
		Source: "https://github.com/railyard-io/railyard", Created: time.Unix(0, 0), Name: name, Out: archive,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s %s built in %v (%d bytes)", res.Name, res.Digest, time.Since(start).Round(time.Millisecond), res.Archive)
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, "ctr", "--address", c.ContainerdSocket, "--namespace", "k8s.io", "images", "ls", "name=="+name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), res.Digest.String()) {
		t.Fatalf("ctr images ls: %v\n%s", err, out)
	}
	return res
}

// renderDaemonSet renders the chart and returns its DaemonSet.
func renderDaemonSet(t *testing.T, ms []helmchart.Manifest) *appsv1.DaemonSet {
	t.Helper()
	for _, m := range ms {
		if strings.HasSuffix(m.Source, "/daemonset.yaml") {
			var ds appsv1.DaemonSet
			mustDecode(t, m, &ds)
			return &ds
		}
	}
	t.Fatal("the chart rendered no DaemonSet")
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// createObjects creates the rendered objects (Namespace, ServiceAccount,
// ConfigMap, DaemonSet) and returns the DaemonSet as stored. Objects other
// than the Namespace are deleted at cleanup (a Namespace would stay
// Terminating without a controller manager).
func createObjects(ctx context.Context, t *testing.T, c *framework.Cluster, ms []helmchart.Manifest, cleanup func(func())) *appsv1.DaemonSet {
	t.Helper()
	var ds *appsv1.DaemonSet
	for _, m := range ms {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(m.Content), &head); err != nil {
			t.Fatal(err)
		}
		var err error
		switch head.Kind {
		case "Namespace":
			var o corev1.Namespace
			mustDecode(t, m, &o)
			_, err = c.Client.CoreV1().Namespaces().Create(ctx, &o, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
		case "ServiceAccount":
			var o corev1.ServiceAccount
			mustDecode(t, m, &o)
			_, err = c.Client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			cleanup(func() {
				_ = c.Client.CoreV1().ServiceAccounts(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case "ConfigMap":
			var o corev1.ConfigMap
			mustDecode(t, m, &o)
			_, err = c.Client.CoreV1().ConfigMaps(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			cleanup(func() {
				_ = c.Client.CoreV1().ConfigMaps(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		case "DaemonSet":
			var o appsv1.DaemonSet
			mustDecode(t, m, &o)
			ds, err = c.Client.AppsV1().DaemonSets(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
			cleanup(func() {
				_ = c.Client.AppsV1().DaemonSets(o.Namespace).Delete(context.Background(), o.Name, metav1.DeleteOptions{})
			})
		default:
			t.Fatalf("%s: unexpected kind %s", m.Source, head.Kind)
		}
		if err != nil {
			t.Fatalf("create %s: %v", m.Source, err)
		}
	}
	if ds == nil {
		t.Fatal("the chart rendered no DaemonSet")
	}
	return ds
}

func mustDecode(t *testing.T, m helmchart.Manifest, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(m.Content), into); err != nil {
		t.Fatalf("%s: %v", m.Source, err)
	}
}

// daemonSetPod is the pod the DaemonSet controller would create for node:
// the template, an owner reference to the DaemonSet, a required node
// affinity on the node's name (the scheduler binds it) and the tolerations
// the controller adds (pkg/controller/daemon/util.AddOrUpdateDaemonPodTolerations).
func daemonSetPod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	tpl := ds.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ds.Name + "-",
			Namespace:    ds.Namespace,
			Labels:       tpl.Labels,
			Annotations:  tpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: types.UID(ds.UID),
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: tpl.Spec,
	}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	for _, key := range []string{"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure", "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"} {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return pod
}

func setNodeLabel(ctx context.Context, t *testing.T, c *framework.Cluster, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if value == "" {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
	}
	if _, err := c.Client.CoreV1().Nodes().Patch(ctx, c.NodeName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Errorf("label node: %v", err)
	}
}

func deletePodNow(t *testing.T, c *framework.Cluster, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.DeletePod(ctx, ns, name); err != nil && !apierrors.IsNotFound(errors.Unwrap(err)) {
		t.Logf("delete pod %s/%s: %v", ns, name, err)
	}
}

// agentProcStatus returns /proc/<pid>/status of the one process whose
// command line contains arg.
func agentProcStatus(t *testing.T, arg string) string {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(arg)) || !bytes.HasSuffix(bytes.SplitN(cmdline, []byte{0}, 2)[0], []byte("railyard-agent")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", p.Name(), "status"))
		if err == nil {
			found = append(found, string(status))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d railyard-agent processes with %s", len(found), arg)
	}
	return found[0]
}

// deleteObjects deletes the rendered ServiceAccount, ConfigMap and
// DaemonSet, as helm uninstall does (the Namespace stays: without a
// controller manager it would stay Terminating).
func deleteObjects(ctx context.Context, t *testing.T, c *framework.Cluster, ms []helmchart.Manifest) {
	t.Helper()
	for _, m := range ms {
		var head struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(m.Content), &head); err != nil {
			t.Fatal(err)
		}
		var err error
		name, ns := head.Metadata.Name, head.Metadata.Namespace
		switch head.Kind {
		case "ServiceAccount":
			err = c.Client.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})
		case "ConfigMap":
			err = c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
		case "DaemonSet":
			err = c.Client.AppsV1().DaemonSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil {
			t.Fatalf("delete %s %s/%s: %v", head.Kind, ns, name, err)
		}
	}
}
