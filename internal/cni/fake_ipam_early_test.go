package cni

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

// called reports whether the fake IPAM has run command cmd.
func (f *fakeIPAM) called(cmd string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if strings.HasPrefix(c, cmd+" ") {
			return true
		}
	}
	return false
}

// moveWatch is the fake Ops whose move into a pod first waits up to wait
// for the IPAM ADD to have run, and records whether it had.
type moveWatch struct {
	*netopstest.Fake
	ipam        *fakeIPAM
	wait        time.Duration
	ipamBefore  bool
	movedToPods int
}

func (m *moveWatch) MoveLink(ctx context.Context, from, name, to string) error {
	if to != netops.Host {
		deadline := time.Now().Add(m.wait)
		for !m.ipam.called("ADD") && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		m.ipamBefore = m.ipam.called("ADD")
		m.movedToPods++
	}
	return m.Fake.MoveLink(ctx, from, name, to)
}

// TestAllocateOnlyIPAMRunsDuringTheMoveFake: with host-local or static,
// whose ADD only allocates, ADD runs the IPAM plugin while the device
// moves into the pod (the move here waits for it: run after the move, as
// before, the IPAM ADD never comes); with any other IPAM (dhcp leases on
// the interface in the pod) it runs after the move. Either way the pod
// gets the address and DEL leaves the VF as it was.
func TestAllocateOnlyIPAMRunsDuringTheMoveFake(t *testing.T) {
	for _, tc := range []struct {
		ipam  string
		early bool
	}{{"host-local", true}, {"static", true}, {"fake-ipam", false}, {"dhcp", false}} {
		t.Run(tc.ipam, func(t *testing.T) {
			w := newWorld(t)
			m := &moveWatch{Fake: w.ops, ipam: w.ipam, wait: 5 * time.Second}
			if !tc.early {
				m.wait = 50 * time.Millisecond
			}
			p := w.plugin()
			p.Ops = m
			conf := w.conf(vfPCI, map[string]any{"ipam": map[string]any{"type": tc.ipam}})
			res, err := p.Add(ctx, args("c1", pod1, "net1", conf))
			if err != nil {
				t.Fatal(err)
			}
			if m.movedToPods != 1 || m.ipamBefore != tc.early {
				t.Errorf("IPAM ADD before the move into the pod: %v (moves %d), want %v", m.ipamBefore, m.movedToPods, tc.early)
			}
			if len(res.IPs) != 1 || len(w.ops.Addrs(pod1, "net1")) != 1 {
				t.Errorf("result IPs %v, pod addresses %v: want one", res.IPs, w.ops.Addrs(pod1, "net1"))
			}
			if err := p.Del(ctx, args("c1", pod1, "net1", conf)); err != nil {
				t.Fatal(err)
			}
			w.assertPristine()
		})
	}
}

// TestAddRollbackAtEveryStepWithAllocateOnlyIPAMFake: a failure at each
// mutating step of an ADD whose IPAM ran during the move, or of the IPAM
// ADD itself, leaves the VF as it was and no address allocated: the
// rollback waits for the IPAM ADD before it releases.
func TestAddRollbackAtEveryStepWithAllocateOnlyIPAMFake(t *testing.T) {
	w := newWorld(t)
	conf := w.conf(vfPCI, map[string]any{"ipam": map[string]any{"type": "host-local"}})
	w.ops.FailAtMutation(0)
	if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", conf)); err != nil {
		t.Fatal(err)
	}
	n := w.ops.Mutations()
	for k := 1; k <= n; k++ {
		w := newWorld(t)
		conf := w.conf(vfPCI, map[string]any{"ipam": map[string]any{"type": "host-local"}})
		w.ops.FailAtMutation(k)
		if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", conf)); !errors.Is(err, netopstest.ErrInjected) {
			t.Fatalf("step %d: ADD error %v, want the injected failure", k, err)
		}
		w.assertPristine()
		if t.Failed() {
			t.Fatalf("step %d: calls %v", k, w.ops.Calls())
		}
	}
	w = newWorld(t)
	w.ipam.fail["ADD"] = errors.New("range exhausted")
	conf = w.conf(vfPCI, map[string]any{"ipam": map[string]any{"type": "host-local"}})
	if _, err := w.plugin().Add(ctx, args("c1", pod1, "net1", conf)); err == nil || !strings.Contains(err.Error(), "range exhausted") {
		t.Fatalf("ADD error %v, want the IPAM's", err)
	}
	w.assertPristine()
}
