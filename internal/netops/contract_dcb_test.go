//go:build linux

package netops_test

import (
	"errors"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// The DCB reads node setup and doctor rely on, against the kernel and the
// fake: a netdev without DCB operations (a veth here; a real ConnectX needs
// hardware) is ErrDCBNotSupported, a missing one ErrLinkNotFound, a name
// no netdev can have an error before any request.
func TestDCBContract(t *testing.T) {
	for _, impl := range []struct {
		name  string
		world func(t *testing.T) world
	}{{"Kernel", realWorld}, {"Fake", fakeWorld}} {
		t.Run(impl.name, func(t *testing.T) {
			w := impl.world(t)
			o := w.o.(netops.DCBOps)
			v := w.veth(netnstest.Name("dcb"))
			if _, err := o.DCB(ctx, v); !errors.Is(err, netops.ErrDCBNotSupported) {
				t.Errorf("DCB of a veth: %v, want ErrDCBNotSupported", err)
			}
			if _, err := o.DCB(ctx, netnstest.Name("nx")); !errors.Is(err, netops.ErrLinkNotFound) {
				t.Errorf("DCB of a missing link: %v, want ErrLinkNotFound", err)
			}
			if err := o.SetDCB(ctx, v, 1<<3, "dscp"); !errors.Is(err, netops.ErrDCBNotSupported) {
				t.Errorf("SetDCB of a veth: %v, want ErrDCBNotSupported", err)
			}
			if err := o.SetDCB(ctx, netnstest.Name("nx"), 1<<3, "dscp"); !errors.Is(err, netops.ErrLinkNotFound) {
				t.Errorf("SetDCB of a missing link: %v, want ErrLinkNotFound", err)
			}
			for _, bad := range []string{"", "a/b", "0123456789abcdef"} {
				if _, err := o.DCB(ctx, bad); err == nil || errors.Is(err, netops.ErrLinkNotFound) {
					t.Errorf("DCB(%q): %v, want an invalid-name error", bad, err)
				}
			}
		})
	}
}
