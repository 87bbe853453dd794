package cni

import (
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

// TestPVRDMAMovesItsPairedNetdevFakeRDMA: a VMware PVRDMA function
// (15ad:0820) has an RDMA device but no netdev; its RoCE GIDs are tied to
// the vmxnet3 netdev of function 0. Given the PVRDMA function (what a pf
// pool hands out), ADD moves that netdev and the RDMA device into the pod
// and DEL brings both back.
func TestPVRDMAMovesItsPairedNetdevFakeRDMA(t *testing.T) {
	w := newWorld(t)
	const vmxnet3, pvrdma = "0000:13:00.0", "0000:13:00.1"
	must(t, w.tree().AddNetdev(vmxnet3, "ens224"))
	must(t, w.tree().AddRDMA(pvrdma, "vmw_pvrdma0"))
	must(t, w.tree().AddGIDNetdev(pvrdma, "vmw_pvrdma0", "ens224"))
	w.ops.AddLink(netops.Host, netops.Link{Name: "ens224", Index: 8, MTU: 1500, Up: true}, false)
	w.ops.AddRDMA("vmw_pvrdma0", netops.Host)
	p := w.plugin()
	a := args("c1", pod1, "net1", w.conf(pvrdma, map[string]any{"vlan": nil, "vlanQoS": nil, "spoofchk": nil,
		"trust": nil, "link_state": nil, "min_tx_rate": nil, "max_tx_rate": nil, "mac": nil}))
	res, err := p.Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interfaces[0].PciID != pvrdma {
		t.Errorf("result pciID %q, want the PVRDMA function", res.Interfaces[0].PciID)
	}
	if _, ok := w.ops.LinkIn(pod1, "net1"); !ok {
		t.Error("ens224 is not net1 in the pod")
	}
	if where, _ := w.ops.RDMANetns("vmw_pvrdma0"); where != pod1 {
		t.Errorf("vmw_pvrdma0 in %q, want the pod", where)
	}
	must(t, p.Check(ctx, a))
	must(t, p.Del(ctx, a))
	if l, ok := w.ops.LinkIn(netops.Host, "ens224"); !ok || l.Index != 8 || !l.Up {
		t.Errorf("ens224 after DEL: %+v (found %v)", l, ok)
	}
	if where, _ := w.ops.RDMANetns("vmw_pvrdma0"); where != netops.Host {
		t.Errorf("vmw_pvrdma0 in %q after DEL, want the host", where)
	}
}
