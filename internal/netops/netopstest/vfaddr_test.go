package netopstest

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

func TestFakeVFAddresses(t *testing.T) {
	f, ctx := New(), context.Background()
	f.AddVF("ib0", 1, netops.VFSettings{})
	a, err := f.VFAddresses(ctx, "ib0", 1)
	if err != nil || a.MAC.String() != "00:00:00:00:00:00" || a.NodeGUID.String() != "00:00:00:00:00:00:00:00" {
		t.Fatalf("new VF = %+v, %v", a, err)
	}
	guid := net.HardwareAddr{2, 0, 0, 0, 0, 0, 0, 9}
	mac := net.HardwareAddr{2, 1, 2, 3, 4, 5}
	if err := f.SetVFGUID(ctx, "ib0", 1, guid); err != nil {
		t.Fatal(err)
	}
	if err := f.SetVFMAC(ctx, "ib0", 1, mac); err != nil {
		t.Fatal(err)
	}
	a, _ = f.VFAddresses(ctx, "ib0", 1)
	if a.NodeGUID.String() != guid.String() || a.PortGUID.String() != guid.String() || a.MAC.String() != mac.String() {
		t.Fatalf("after set = %+v", a)
	}
	if err := f.SetVFMAC(ctx, "ib0", 1, net.HardwareAddr{1}); err == nil {
		t.Fatal("short MAC accepted")
	}
	f.FailAtMutation(1)
	if err := f.SetVFMAC(ctx, "ib0", 1, net.HardwareAddr{2, 9, 9, 9, 9, 9}); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected failure = %v", err)
	}
	if a, _ := f.VFAddresses(ctx, "ib0", 1); a.MAC.String() != mac.String() {
		t.Fatalf("a failed SetVFMAC changed the MAC to %s", a.MAC)
	}
	f.RemoveVFs("ib0")
	if _, err := f.VFAddresses(ctx, "ib0", 1); err == nil {
		t.Fatal("removed VF still answers")
	}
	if err := NewFailing(f, 1).SetVFMAC(ctx, "ib0", 1, mac); !errors.Is(err, ErrInjected) {
		t.Fatalf("Failing.SetVFMAC = %v", err)
	}
}
