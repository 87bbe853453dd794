package cni

import (
	"errors"
	"os"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

// TestNoDeviceInfoWithoutPCIAddressFakeNetdev: a netdev named by "device"
// that is no PCI function gets no device-info document, since a "pci"
// document must name its pci-address (device-info-spec 1.1); before, it
// got {"type":"pci","version":"1.1.0","pci":{}}, which Multus copied into
// the pod's network-status. ADD and DEL still succeed.
func TestNoDeviceInfoWithoutPCIAddressFakeNetdev(t *testing.T) {
	w := newWorld(t)
	w.ops.AddLink(netops.Host, netops.Link{Name: "eth9", Index: 9, MTU: 1500, MAC: origMAC, Up: true}, false)
	file := infoFile(w.infoDir, "rdma-net", "c1", "net1")
	conf := w.conf("", map[string]any{"deviceID": nil, "device": "eth9", "vlan": nil, "vlanQoS": nil, "spoofchk": nil, "trust": nil,
		"link_state": nil, "min_tx_rate": nil, "max_tx_rate": nil, "rdma": nil, "CNIDeviceInfoFile": file})
	a := args("c1", pod1, "net1", conf)
	res, err := w.plugin().Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if res.Interfaces[0].PciID != "" {
		t.Fatalf("test premise: eth9 has PCI address %q", res.Interfaces[0].PciID)
	}
	if b, err := os.ReadFile(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("device-info file %s (%v), want none", b, err)
	}
	must(t, w.plugin().Del(ctx, a))
	if _, ok := w.ops.LinkIn(netops.Host, "eth9"); !ok {
		t.Fatal("eth9 not back on the host")
	}
}
