package draplugin_test

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/draview"
)

// What railyard-cni recorded for a prepared claim's device becomes the
// claim's status.devices entry (interface, IPs, MAC, Ready), beside
// another driver's entry, written once; DEL's removal of the record
// removes the entry; a record of a claim the driver does not hold is
// collected. Faked: the API server (client-go's fake clientset), the
// records (written here as railyard-cni writes them).
func TestSyncStatusWritesNetworkDataFromRailyardCNIRecords(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	ctx := context.Background()
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"), nic("0000:18:00.2", "nic1"))
	c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: "gpu.example.com", Pool: "p", Device: "gpu0"}}
	client := fake.NewClientset(c)
	updates := 0
	client.PrependReactor("update", "resourceclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			updates++
		}
		return false, nil, nil
	})
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c}); res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	rec := draview.DeviceStatus{ClaimUID: uidA, PCI: "0000:18:00.1", ContainerID: "0123456789abcdef", IfName: "net1",
		MAC: "02:11:22:33:44:55", IPs: []string{"10.10.1.7/24"}}
	must(t, draview.WriteStatus(n.view, rec))
	must(t, draview.WriteStatus(n.view, draview.DeviceStatus{ClaimUID: "gone-claim", PCI: "0000:18:00.2", ContainerID: "feed", IfName: "net1"}))

	status := func() []resourceapi.AllocatedDeviceStatus {
		t.Helper()
		got, err := client.ResourceV1().ResourceClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
		must(t, err)
		return got.Status.Devices
	}
	must(t, d.SyncStatus(ctx, client))
	got := status()
	if len(got) != 2 || got[0].Driver != "gpu.example.com" {
		t.Fatalf("status.devices %+v: the other driver's entry lost or ours missing", got)
	}
	e := got[1]
	if e.Driver != "rdma.railyard.io" || e.Pool != node+"/rdma-vf" || e.Device != "pci-0000-18-00-1" || e.NetworkData == nil ||
		e.NetworkData.InterfaceName != "net1" || e.NetworkData.HardwareAddress != "02:11:22:33:44:55" || len(e.NetworkData.IPs) != 1 ||
		e.NetworkData.IPs[0] != "10.10.1.7/24" || len(e.Conditions) != 1 || e.Conditions[0].Type != "Ready" || e.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("entry %+v", e)
	}
	if sts, _ := draview.ReadStatuses(n.view); len(sts) != 1 {
		t.Errorf("the record of a claim the driver does not hold was kept: %+v", sts)
	}
	// Nothing changed: no second write.
	must(t, d.SyncStatus(ctx, client))
	if updates != 1 {
		t.Errorf("%d status updates, want 1", updates)
	}
	// DEL removed the record: the entry goes, the other driver's stays.
	must(t, draview.RemoveStatus(n.view, rec.ContainerID, rec.IfName))
	must(t, d.SyncStatus(ctx, client))
	if got := status(); len(got) != 1 || got[0].Driver != "gpu.example.com" {
		t.Errorf("after detach: %+v", got)
	}
	// A restarted agent (a new driver from the checkpoint) finds the
	// claim's status as it should be and writes nothing.
	d2 := n.driver(t)
	must(t, d2.SyncStatus(ctx, client))
	if updates != 2 {
		t.Errorf("%d status updates after a restart with nothing to change, want 2", updates)
	}
	// An entry whose record went while the agent was down (a DEL during a
	// restart) is removed by the restarted agent's first pass.
	c2, err := client.ResourceV1().ResourceClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	must(t, err)
	c2.Status.Devices = append(c2.Status.Devices, e)
	_, err = client.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, c2, metav1.UpdateOptions{})
	must(t, err)
	d3 := n.driver(t)
	must(t, d3.SyncStatus(ctx, client))
	if got := status(); len(got) != 1 || got[0].Driver != "gpu.example.com" {
		t.Errorf("a stale entry after a restart: %+v", got)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
