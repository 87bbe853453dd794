package cni

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/draview"
)

const draRes = "railyard.io/rdma_dra"

// draWorld is a node (a vfEnv) whose agent published a DRA view: the DRA
// pool draRes and claim ml/trainer-nics reserved for pod ml/trainer (UID
// u1) holding both VFs, VF 1 first (rail 0), then VF 0 (rail 1).
type draWorld struct {
	vfEnv
	dir string // the binding directory
}

func newDRAWorld(e vfEnv) *draWorld {
	w := &draWorld{vfEnv: e, dir: filepath.Join(e.T().TempDir(), "binding")}
	w.publish(draview.Claim{Namespace: "ml", Name: "trainer-nics", UID: "c1", Pods: []draview.Pod{{Name: "trainer", UID: "u1"}},
		Devices: []draview.Device{
			{PCI: e.PCI(1), Resource: draRes, RDMA: "mlx5_4", PF: e.PFPCI(), Rail: 0},
			{PCI: e.PCI(0), Resource: draRes, RDMA: "mlx5_3", PF: e.PFPCI(), Rail: 1},
		}})
	return w
}

// publish writes the view with these claims, as the agent's DRA plugin
// does at Prepare and Unprepare.
func (w *draWorld) publish(claims ...draview.Claim) {
	must(w.T(), draview.Write(w.dir, draview.View{Pools: []string{draRes, "railyard.io/other_dra"}, Claims: claims}))
}

// args is the ADD/DEL/CHECK of network draRes for interface ifname of
// sandbox cid of pod podArgs, in pod namespace i.
func (w *draWorld) args(cid string, i int, ifname, podArgs string) Args {
	conf := w.Conf(0, map[string]any{"deviceID": nil, "resourceName": draRes, "bindingDir": w.dir,
		"mac": nil, "CNIDeviceInfoFile": infoFile(w.InfoDir(), netName(w), cid, ifname)})
	a := args(cid, w.Pod(i), ifname, conf)
	a.PluginArgs = podArgs
	return a
}

func (w *draWorld) records() []*state.Record {
	recs, err := state.Store{Dir: w.StateDir()}.List()
	must(w.T(), err)
	return recs
}

// TestDRAClaimNetdevsAttachInClaimOrderFakeVF: a network naming a DRA
// pool by resourceName, listed twice, attaches the pod's claimed VFs in
// the claim's rail order (VF 1, then VF 0), each with its RDMA device
// moved (the fake's RDMA); a third listing finds every device attached
// (try again later) and changes nothing. CHECK passes. DEL needs no DRA
// view: the first DEL runs after the claim was unprepared (the view
// without it), the second after the view is gone; both VFs are back,
// VF 0 exactly as it started, and DEL again succeeds.
func TestDRAClaimNetdevsAttachInClaimOrderFakeVF(t *testing.T) {
	checkDRAClaimNetdevsAttachInClaimOrder(newDRAWorld(newWorld(t)))
}

func checkDRAClaimNetdevsAttachInClaimOrder(w *draWorld) {
	t := w.T()
	p := w.P()
	ctx := context.Background()
	var as []Args
	for i, want := range []string{w.PCI(1), w.PCI(0)} {
		a := w.args("sb1", 0, []string{"net1", "net2"}[i], podCNIArgs)
		res, err := p.Add(ctx, a)
		if err != nil {
			t.Fatalf("ADD %s: %v", a.IfName, err)
		}
		if len(res.Interfaces) != 1 || res.Interfaces[0].PciID != want {
			t.Fatalf("ADD %s attached %+v, want %s", a.IfName, res.Interfaces, want)
		}
		if !w.InPod(w.Pod(0), a.IfName) {
			t.Fatalf("%s not in the pod", a.IfName)
		}
		as = append(as, a)
	}
	if fw, ok := w.vfEnv.(*world); ok {
		for dev, pod := range map[string]string{"mlx5_3": w.Pod(0), "mlx5_4": w.Pod(0)} {
			if where, _ := fw.ops.RDMANetns(dev); where != pod {
				t.Errorf("RDMA device %s in %q, want the pod's namespace", dev, where)
			}
		}
	}
	// Each attachment is recorded for the agent's claim status
	// (networkData): the claim, the device, the interface and its MAC.
	sts, err := draview.ReadStatuses(w.dir)
	must(t, err)
	got := map[string]draview.DeviceStatus{}
	for _, st := range sts {
		got[st.IfName] = st
	}
	for i, want := range []string{w.PCI(1), w.PCI(0)} {
		st := got[as[i].IfName]
		if st.ClaimUID != "c1" || st.PCI != want || st.ContainerID != "sb1" || st.MAC == "" {
			t.Errorf("status record of %s: %+v", as[i].IfName, st)
		}
	}
	_, err = p.Add(ctx, w.args("sb1", 0, "net3", podCNIArgs))
	if Code(err) != types.ErrTryAgainLater || !strings.Contains(err.Error(), "every device of DRA pool") {
		t.Fatalf("third ADD: code %d, %v", Code(err), err)
	}
	if w.InPod(w.Pod(0), "net3") || len(w.records()) != 2 {
		t.Fatalf("third ADD changed something: records %d", len(w.records()))
	}
	for _, a := range as {
		if err := p.Check(ctx, a); err != nil {
			t.Errorf("CHECK %s: %v", a.IfName, err)
		}
	}
	w.publish() // Unprepare ran (out of the kubelet's order: DEL first)
	must(t, p.Del(ctx, as[1]))
	if _, ok := w.HostLink(w.Orig().Name); !ok {
		t.Fatal("VF 0 not back on the host after DEL with the claim unprepared")
	}
	// DEL removed its record (the agent collects the records of claims
	// it no longer holds, for DELs that ran without the view).
	if sts, err := draview.ReadStatuses(w.dir); err != nil || len(sts) != 1 || sts[0].IfName != as[0].IfName {
		t.Errorf("status records after DEL of %s: %+v, %v", as[1].IfName, sts, err)
	}
	must(t, os.Remove(draview.Path(w.dir)))
	must(t, p.Del(ctx, as[0]))
	must(t, p.Del(ctx, as[0]))
	must(t, p.Del(ctx, as[1]))
	w.Pristine()
	if recs := w.records(); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
}

// TestDRANetworkOfAPodWithoutClaimAttachesNothingFakeVF: a pod holding
// no device of the DRA pool (no claim; a claim of another pool; a pod of
// the claim's name but another UID, recreated) gets an empty result,
// CHECK agrees and DEL succeeds; nothing moves.
func TestDRANetworkOfAPodWithoutClaimAttachesNothingFakeVF(t *testing.T) {
	checkDRANetworkOfAPodWithoutClaimAttachesNothing(newDRAWorld(newWorld(t)))
}

func checkDRANetworkOfAPodWithoutClaimAttachesNothing(w *draWorld) {
	t := w.T()
	p := w.P()
	ctx := context.Background()
	w.publish(draview.Claim{Namespace: "ml", Name: "trainer-nics", UID: "c1", Pods: []draview.Pod{{Name: "trainer", UID: "u1"}},
		Devices: []draview.Device{{PCI: w.PCI(0), Resource: draRes, PF: w.PFPCI(), Rail: 0}}},
		draview.Claim{Namespace: "ml", Name: "other", UID: "c2", Pods: []draview.Pod{{Name: "dns"}},
			Devices: []draview.Device{{PCI: w.PCI(1), Resource: "railyard.io/other_dra", PF: w.PFPCI(), Rail: 0}}})
	for _, podArgs := range []string{
		"K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=coredns;K8S_POD_UID=u9",
		"K8S_POD_NAMESPACE=ml;K8S_POD_NAME=dns;K8S_POD_UID=u8",
		"K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer;K8S_POD_UID=u2",
	} {
		a := w.args("sb9", 1, "eth1", podArgs)
		r, err := p.Add(ctx, a)
		if err != nil || len(r.Interfaces) != 0 || len(r.IPs) != 0 {
			t.Fatalf("%s: ADD = %+v, %v; want an empty result", podArgs, r, err)
		}
		if err := p.Check(ctx, a); err != nil {
			t.Errorf("%s: CHECK: %v", podArgs, err)
		}
		must(t, p.Del(ctx, a))
	}
	// CHECK of the claim's own pod with no attachment is not fine.
	if err := p.Check(ctx, w.args("sb1", 0, "net1", podCNIArgs)); Code(err) != types.ErrUnknownContainer {
		t.Errorf("CHECK of a pod holding a device, nothing attached: code %d, %v", Code(err), err)
	}
	w.Pristine()
}

// TestDRADeviceOfASharedClaimAttachedElsewhereFakeVF: a claim reserved for
// two pods: the first pod's sandbox gets the VF; the second's ADD is
// refused (try again later) with a message naming the device, the claim,
// the sandbox holding it and why, and changes nothing.
func TestDRADeviceOfASharedClaimAttachedElsewhereFakeVF(t *testing.T) {
	checkDRADeviceOfASharedClaimAttachedElsewhere(newDRAWorld(newWorld(t)))
}

func checkDRADeviceOfASharedClaimAttachedElsewhere(w *draWorld) {
	t := w.T()
	p := w.P()
	ctx := context.Background()
	w.publish(draview.Claim{Namespace: "ml", Name: "shared", UID: "c1", Pods: []draview.Pod{{Name: "trainer", UID: "u1"}, {Name: "helper", UID: "u2"}},
		Devices: []draview.Device{{PCI: w.PCI(0), Resource: draRes, PF: w.PFPCI(), Rail: 0}}})
	first := w.args("sb1", 0, "net1", podCNIArgs)
	if _, err := p.Add(ctx, first); err != nil {
		t.Fatal(err)
	}
	_, err := p.Add(ctx, w.args("sb2", 1, "net1", "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=helper;K8S_POD_UID=u2"))
	if Code(err) != types.ErrTryAgainLater {
		t.Fatalf("second pod's ADD: code %d, %v", Code(err), err)
	}
	for _, s := range []string{w.PCI(0), "ml/shared", "container sb1 as net1", "reserved for 2 pods"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if w.InPod(w.Pod(1), "net1") || !w.InPod(w.Pod(0), "net1") {
		t.Fatal("the refused ADD moved the VF")
	}
	must(t, p.Del(ctx, first))
	w.Pristine()
}

// TestDRAViewThatCannotBeReadFakeVF: a corrupt DRA view cannot say
// whether resourceName is a DRA pool: ADD tries again later and changes
// nothing; DEL still succeeds.
func TestDRAViewThatCannotBeReadFakeVF(t *testing.T) {
	w := newDRAWorld(newWorld(t))
	must(t, os.WriteFile(draview.Path(w.dir), []byte(`{"version":1,"pools":["b","a"],"claims":[]}`), 0o644))
	a := w.args("sb1", 0, "net1", podCNIArgs)
	_, err := w.P().Add(context.Background(), a)
	if Code(err) != types.ErrTryAgainLater || !strings.Contains(err.Error(), draview.FileName) {
		t.Fatalf("ADD with a corrupt view: code %d, %v", Code(err), err)
	}
	must(t, w.P().Del(context.Background(), a))
	w.Pristine()
}

// TestSandboxPoolBindsBesideADRAViewFakeVF: a DRA view naming other pools
// changes nothing for a sandbox pool's resourceName network.
func TestSandboxPoolBindsBesideADRAViewFakeVF(t *testing.T) {
	w := newLateWorld(newWorld(t))
	must(t, draview.Write(w.dir, draview.View{Pools: []string{draRes}}))
	checkLateBindingByResourceName(w)
}
