package netopstest

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

// The fake must enforce the kernel rules the plugin's tests rely on.
func TestFakeEnforcesKernelRules(t *testing.T) {
	ctx := context.Background()
	f := New()
	f.AddNetns("/pod")
	f.AddLink(netops.Host, netops.Link{Name: "eth1", MTU: 1500, AltNames: []string{"enp1s0"}}, false)
	f.AddLink(netops.Host, netops.Link{Name: "eth2", MTU: 1500}, true)
	f.AddLink("/pod", netops.Link{Name: "enp1s0", MTU: 1500}, true)

	if err := f.RenameLink(ctx, netops.Host, "eth2", "enp1s0"); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("rename onto an altname: %v", err)
	}
	if err := f.MoveLink(ctx, netops.Host, "eth1", "/pod"); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("move with a colliding altname: %v", err)
	}
	if err := f.MoveLink(ctx, netops.Host, "eth1", "/gone"); !errors.Is(err, netops.ErrNetnsNotFound) {
		t.Errorf("move to a missing namespace: %v", err)
	}
	if _, err := f.Link(ctx, netops.Host, "enp1s0"); err != nil {
		t.Errorf("lookup by altname: %v", err)
	}
	must(t, f.DelAltName(ctx, netops.Host, "eth1", "enp1s0"))
	must(t, f.SetLinkUp(ctx, netops.Host, "eth1", true))
	must(t, f.MoveLink(ctx, netops.Host, "eth1", "/pod"))
	if l, _ := f.LinkIn("/pod", "eth1"); l.Up {
		t.Error("a moved link stays up")
	}
	f.AddLink(netops.Host, netops.Link{Name: "eth1"}, true)
	f.DeleteNetns("/pod")
	if _, ok := f.LinkIn(netops.Host, "dev0"); !ok {
		t.Errorf("physical link not refunded as dev0 when its name is taken: %v", f.LinkNames(netops.Host))
	}
	if _, ok := f.LinkIn(netops.Host, "enp1s0"); ok {
		t.Error("virtual link survived its namespace")
	}
	f.FailAtMutation(2)
	must(t, f.SetMTU(ctx, netops.Host, "eth2", 1400))
	if err := f.SetMTU(ctx, netops.Host, "eth2", 1300); !errors.Is(err, ErrInjected) {
		t.Errorf("second mutation: %v", err)
	}
	if l, _ := f.LinkIn(netops.Host, "eth2"); l.MTU != 1400 {
		t.Errorf("injected failure had an effect: MTU %d", l.MTU)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
