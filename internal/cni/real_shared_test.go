//go:build linux

package cni

// Test bodies shared by the real-kernel worlds: the VM's igb VF (vfWorld,
// real_vf_test.go) and a veth standing in for a PCI function (realWorld,
// real_netns_test.go).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

// kernelWorld is a world whose device is on the real kernel.
type kernelWorld interface {
	plugin(o netops.Ops) *Plugin
	assertPristine()
}

// checkAddRollbackAtEveryStep: ADD through netopstest.Failing over
// netops.Linux makes want mutating calls; a fault injected at each one,
// in a fresh world, leaves the device pristine.
func checkAddRollbackAtEveryStep[W kernelWorld](t *testing.T, newW func(*testing.T) W, argsOf func(W) Args, want int) {
	t.Helper()
	probe := newW(t)
	counter := netopstest.NewFailing(netops.Linux{}, 0)
	if _, err := probe.plugin(counter).Add(ctx, argsOf(probe)); err != nil {
		t.Fatal(err)
	}
	n := counter.Mutations()
	if n != want {
		t.Fatalf("ADD made %d mutating calls (%v), want %d", n, counter.Calls(), want)
	}
	must(t, probe.plugin(netops.Linux{}).Del(ctx, argsOf(probe)))
	probe.assertPristine()
	for k := 1; k <= n; k++ {
		t.Run(fmt.Sprintf("step%02d", k), func(t *testing.T) {
			w := newW(t)
			_, err := w.plugin(netopstest.NewFailing(netops.Linux{}, k)).Add(ctx, argsOf(w))
			if !errors.Is(err, netopstest.ErrInjected) {
				t.Fatalf("ADD error %v, want the injected failure", err)
			}
			w.assertPristine()
		})
	}
}

// checkDelWithRecordRemoved: after ADD the records are lost; DEL still
// returns the netdev to the host under its name (dev), from the marker
// alias, and clears the alias.
func checkDelWithRecordRemoved(t *testing.T, w kernelWorld, a Args, stateDir, dev string) {
	t.Helper()
	p := w.plugin(netops.Linux{})
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	must(t, os.RemoveAll(filepath.Join(stateDir, "devices")))
	must(t, p.Del(ctx, a))
	l, err := netops.Linux{}.Link(ctx, netops.Host, dev)
	if err != nil {
		t.Fatalf("device not back under its name: %v", err)
	}
	if l.Alias != "" {
		t.Errorf("alias %q left (the original alias was only in the record)", l.Alias)
	}
}
