//go:build e2e

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/railctl"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// needGroupScheduling skips a test on a cluster without Kubernetes 1.37's
// group scheduling (up.sh --group-scheduling; TestMain asks for it on 1.37).
func needGroupScheduling(t *testing.T, c *framework.MultiCluster) {
	t.Helper()
	needRelease(t, "1.37", "group scheduling with topology constraints (scheduling.k8s.io/v1beta1 PodGroups, KEP-5732's TopologyAwareWorkloadScheduling: not in 1.35)")
	if !c.Info.GroupScheduling {
		t.Fatal("the 1.37 cluster runs without group scheduling (up.sh --group-scheduling)")
	}
}

// TestRailsPodGroupKeepsOneLeafSet: the PodGroup `railyard rails scheduler
// podgroup --level leaf-set` prints (gang of 2, topology key
// railyard.io/leaf-set), applied to a 1.37 cluster with the group
// scheduling gates on; the two GPU nodes carry different leaf-set values
// (written by the test: a STAND-IN for `railyard fabric publish` on a
// fabric of two leaf sets; this cluster's fabric cables every node to the
// same leaves). The real kube-scheduler places both pods of the group
// under one value: on one node.
func TestRailsPodGroupKeepsOneLeafSet(t *testing.T) {
	c := mc(t)
	needGroupScheduling(t, c)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	ctx := framework.Context(t, 2*time.Minute)
	leafSets := map[string]string{gpus[0].Name: "ls-a", gpus[1].Name: "ls-b"}
	for node, v := range leafSets {
		labelNode(ctx, t, c, node, fabric.LeafSetLabel, v)
	}
	applyPodGroup(ctx, t, c, "split", "--level", "leaf-set")
	for i := range 2 {
		p := framework.BusyboxPod("default", fmt.Sprintf("split-%d", i), "sleep", "3600")
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("split")}
		if _, err := c.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", p.Name) })
	}
	got := map[string]string{}
	for i := range 2 {
		name := fmt.Sprintf("split-%d", i)
		p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
		if err != nil {
			t.Fatalf("%v\n%s", err, jobStory(ctx, c, "split", nil))
		}
		got[name] = p.Spec.NodeName
	}
	if got["split-0"] != got["split-1"] {
		t.Errorf("the group's pods on %v: leaf sets %s and %s, want one", got, leafSets[got["split-0"]], leafSets[got["split-1"]])
	}
	t.Logf("PodGroup split (topology key %s): pods on %v, leaf set %s", fabric.LeafSetLabel, got, leafSets[got["split-0"]])
}

// testPodGroupRails (a subtest of TestRailsChosenAtAdmissionStandInGPUDRA, the rail
// controller running): two bare pods of a PodGroup (gang of 2, topology
// key railyard.io/leaf-set; both GPU nodes under one leaf set, as this
// fabric cables them, the label written by the test as `railyard fabric
// publish` would), labelled for rails with 4 GPUs each. The webhook finds
// the pods' job through spec.schedulingGroup (the PodGroup, served as
// scheduling.k8s.io/v1beta1), the template is owned by the PodGroup, and
// both pods run on two nodes of the leaf set on one rail set; deleting
// the PodGroup deletes the template.
func testPodGroupRails(ctx context.Context, t *testing.T, c *framework.MultiCluster) {
	gpus := c.Info.GPUNodes()
	for _, n := range gpus {
		labelNode(ctx, t, c, n.Name, fabric.LeafSetLabel, "ls-0")
	}
	uid := applyPodGroup(ctx, t, c, "gang", "--level", "leaf-set")
	var names []string
	for i := range 2 {
		p := framework.BusyboxPod("default", fmt.Sprintf("gang-%d", i), "sleep", "3600")
		p.Labels = map[string]string{railctl.LabelRails: railctl.RailsSame}
		p.Annotations = map[string]string{railctl.AnnotationGPUs: "4", railctl.AnnotationPods: "2"}
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("gang")}
		if _, err := c.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
		t.Cleanup(func() { _ = c.DeletePod(context.Background(), "default", p.Name) })
	}
	tmplName := jobTemplate(ctx, t, c, "gang")
	tmpl, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Get(ctx, tmplName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.OwnerReferences) != 1 || tmpl.OwnerReferences[0].UID != uid || tmpl.OwnerReferences[0].APIVersion != "scheduling.k8s.io/v1beta1" {
		t.Errorf("template %s owners %+v, want the PodGroup gang (scheduling.k8s.io/v1beta1, %s)", tmplName, tmpl.OwnerReferences, uid)
	}
	set, err := parseRails(tmpl.Annotations["railyard.io/rails"])
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, name := range names {
		p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
		if err != nil {
			t.Fatalf("%v\n%s", err, jobStory(ctx, c, "gang", nil))
		}
		rails := podClaimRails(ctx, t, c, p, tmplName)
		if fmt.Sprint(rails) != fmt.Sprint(set) {
			t.Errorf("pod %s on %s: NICs on rails %v, the template says %v", name, p.Spec.NodeName, rails, set)
		}
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 2 {
		t.Errorf("the group's pods on nodes %v, want two", nodes)
	}
	t.Logf("PodGroup gang: template %s owned by it, rails %v, pods on %v", tmplName, set, nodes)
	// The PodGroup goes once its pods are gone (its finalizer
	// scheduling.k8s.io/podgroup-protection), and the template with it.
	for _, name := range names {
		if err := c.DeletePod(ctx, "default", name); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Client.SchedulingV1beta1().PodGroups("default").Delete(ctx, "gang", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "template "+tmplName+" deleted with its PodGroup", func(ctx context.Context) (bool, string) {
		_, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Get(ctx, tmplName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}

// applyPodGroup applies the PodGroup `railyard rails scheduler podgroup
// NAME --pods 2 ARGS` prints from the cluster's nodes, deleted when the
// test ends, and returns its UID.
func applyPodGroup(ctx context.Context, t *testing.T, c *framework.MultiCluster, name string, args ...string) types.UID {
	t.Helper()
	cmd := exec.CommandContext(ctx, railyardBin(t), append([]string{"rails", "scheduler", "podgroup", name, "--pods", "2",
		"-l", "railyard.io/rdma=true", "--kubeconfig", c.Kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("railyard rails scheduler podgroup: %v\n%s", err, stderr.String())
	}
	t.Logf("railyard rails scheduler podgroup %s: %s", name, strings.TrimSpace(stderr.String()))
	if b, err := kubectl(ctx, c, string(out), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, b, out)
	}
	t.Cleanup(func() {
		_ = c.Client.SchedulingV1beta1().PodGroups("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	g, err := c.Client.SchedulingV1beta1().PodGroups("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Spec.SchedulingConstraints == nil || len(g.Spec.SchedulingConstraints.Topology) != 1 || g.Spec.SchedulingConstraints.Topology[0].Key != fabric.LeafSetLabel {
		t.Fatalf("PodGroup %s as the API server keeps it: constraints %+v, want topology key %s (is TopologyAwareWorkloadScheduling on?)", name, g.Spec.SchedulingConstraints, fabric.LeafSetLabel)
	}
	return g.UID
}

// labelNode sets a node's label (as it was again when the test ends).
func labelNode(ctx context.Context, t *testing.T, c *framework.MultiCluster, node, key, value string) {
	t.Helper()
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var old any // nil removes it
	if v, ok := n.Labels[key]; ok {
		old = v
	}
	patch := func(ctx context.Context, v any) error {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
		if err != nil {
			return err
		}
		_, err = c.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	if err := patch(ctx, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = patch(context.Background(), old) })
}
