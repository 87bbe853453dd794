package draplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draview"
)

func reserve(c *resourceapi.ResourceClaim, refs ...resourceapi.ResourceClaimConsumerReference) *resourceapi.ResourceClaim {
	c = c.DeepCopy()
	c.Status.ReservedFor = refs
	return c
}

func podRef(name, uid string) resourceapi.ResourceClaimConsumerReference {
	return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: types.UID(uid)}
}

func readView(t *testing.T, dir string) *draview.View {
	t.Helper()
	v, err := draview.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPrepareRecordsReservedPodsInTheView: Prepare records the pods of
// the claim's status.reservedFor (other consumers left out) in the
// checkpoint and publishes the DRA view railyard-cni reads (the node's
// DRA pools, the claim's pods and devices in rail order with RDMA device
// and PF) before it returns; a second Prepare with another pod reserved
// too updates both; a restarted driver keeps the pods and rewrites a lost
// view; Unprepare takes the claim out of the view.
func TestPrepareRecordsReservedPodsInTheView(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	if v := readView(t, n.view); len(v.Claims) != 0 {
		t.Fatalf("view of a new driver has claims: %+v", v)
	} else if diff := cmp.Diff([]string{vfPool.Name}, v.Pools); diff != "" {
		t.Fatalf("pools of a new driver (-want +got):\n%s", diff)
	}
	job := resourceapi.ResourceClaimConsumerReference{APIGroup: "batch", Resource: "jobs", Name: "j", UID: "j-1"}
	c := reserve(claim(t, uidA, nic("0000:40:00.1", "nic1"), nic("0000:18:00.2", "nic0")), podRef("trainer", "p-1"), job)
	res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	want := draview.Claim{Namespace: "ns", Name: "claim-" + uidA, UID: uidA, Pods: []draview.Pod{{Name: "trainer", UID: "p-1"}},
		Devices: []draview.Device{
			{PCI: "0000:18:00.2", Resource: vfPool.Name, PF: "0000:18:00.0", Rail: 0},
			{PCI: "0000:40:00.1", Resource: vfPool.Name, PF: "0000:40:00.0", Rail: 1},
		}}
	v := readView(t, n.view)
	if len(v.Claims) != 1 || len(v.Claims[0].Devices) != 2 {
		t.Fatalf("view after Prepare: %+v", v)
	}
	if diff := cmp.Diff(want.Pods, v.Claims[0].Pods); diff != "" {
		t.Fatalf("pods after Prepare (-want +got):\n%s", diff)
	}
	// The RDMA device names are the generated tree's.
	topo := n.topo(t)
	for i := range want.Devices {
		vf, _, ok := topo.VF(want.Devices[i].PCI)
		if !ok || vf.RDMA == "" {
			t.Fatalf("VF %s has no RDMA device in the tree", want.Devices[i].PCI)
		}
		want.Devices[i].RDMA = vf.RDMA
	}
	if diff := cmp.Diff(want, v.Claims[0]); diff != "" {
		t.Fatalf("claim in the view (-want +got):\n%s", diff)
	}
	if got := v.PodDevices(draview.PodRef{Namespace: "ns", Name: "trainer", UID: "p-1"}, vfPool.Name); len(got) != 2 || got[0].PCI != "0000:18:00.2" {
		t.Fatalf("PodDevices of the pod: %+v", got)
	}

	// Prepared again with a second pod reserved (a shared claim).
	c2 := reserve(c, podRef("trainer", "p-1"), podRef("helper", "p-2"))
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c2}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	wantPods := []draview.Pod{{Name: "trainer", UID: "p-1"}, {Name: "helper", UID: "p-2"}}
	if diff := cmp.Diff(wantPods, readView(t, n.view).Claims[0].Pods); diff != "" {
		t.Fatalf("pods after the second Prepare (-want +got):\n%s", diff)
	}

	// A restart with the view lost: New writes it again from the checkpoint.
	if err := os.Remove(draview.Path(n.view)); err != nil {
		t.Fatal(err)
	}
	restarted := n.driver(t)
	if v := readView(t, n.view); len(v.Claims) != 1 {
		t.Fatalf("view after a restart: %+v", v)
	} else if diff := cmp.Diff(wantPods, v.Claims[0].Pods); diff != "" {
		t.Fatalf("pods after a restart (-want +got):\n%s", diff)
	}
	if un, _ := restarted.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c.UID}}); un[c.UID] != nil {
		t.Fatal(un[c.UID])
	}
	if v := readView(t, n.view); len(v.Claims) != 0 || !v.HasPool(vfPool.Name) {
		t.Fatalf("view after Unprepare: %+v", v)
	}
}

// TestCheckpointWithoutPodsStillLoads: a checkpoint written before pods
// were kept (no "pods" key) loads; its claim is in the view without pods
// (railyard-cni attaches its devices to no pod) until it is prepared
// again, which records them.
func TestCheckpointWithoutPodsStillLoads(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	c := reserve(claim(t, uidA, nic("0000:18:00.1", "nic0")), podRef("trainer", "p-1"))
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	// Rewrite the checkpoint as the previous version wrote it.
	path := filepath.Join(n.state, draplugin.CheckpointFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	claims := doc["claims"].([]any)
	delete(claims[0].(map[string]any), "pods")
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := n.driver(t)
	if p := old.Prepared(); len(p[c.UID]) != 1 {
		t.Fatalf("old checkpoint: prepared %v", p)
	}
	v := readView(t, n.view)
	if len(v.Claims) != 1 || len(v.Claims[0].Pods) != 0 || len(v.Claims[0].Devices) != 1 {
		t.Fatalf("view from an old checkpoint: %+v", v)
	}
	if res, _ := old.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	if diff := cmp.Diff([]draview.Pod{{Name: "trainer", UID: "p-1"}}, readView(t, n.view).Claims[0].Pods); diff != "" {
		t.Fatalf("pods after Prepare again (-want +got):\n%s", diff)
	}
}

// TestPrepareFailsWhenTheViewCannotBeWritten: without the view
// railyard-cni would attach nothing, so Prepare fails (the record kept,
// as for a spec it cannot write); once the directory is writable the
// kubelet's retry publishes it.
func TestPrepareFailsWhenTheViewCannotBeWritten(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	if err := os.RemoveAll(n.view); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.view, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := reserve(claim(t, uidA, nic("0000:18:00.1", "nic0")), podRef("trainer", "p-1"))
	res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err == nil {
		t.Fatal("Prepare succeeded without the view")
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); !os.IsNotExist(err) {
		t.Fatalf("spec written before the view: %v", err)
	}
	if p := d.Prepared(); len(p[c.UID]) != 1 {
		t.Fatalf("record not kept: %v", p)
	}
	if err := os.Remove(n.view); err != nil {
		t.Fatal(err)
	}
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	if v := readView(t, n.view); len(v.Claims) != 1 || v.Claims[0].Devices[0].PCI != "0000:18:00.1" {
		t.Fatalf("view after the retry: %+v", v)
	}
}
