package nodesetup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/netops"
)

// The world's DCB is the netops fake's, its ECN the real ECNSysfs writing
// the generated tree; each write is a step failAt can fail.

func (w *world) DCB(ctx context.Context, netdev string) (netops.DCB, error) {
	return w.ops.DCB(ctx, netdev)
}

func (w *world) SetDCB(ctx context.Context, netdev string, pfc uint8, trust string) error {
	if err := w.step("SetDCB %s %#02x %s", netdev, pfc, trust); err != nil {
		return err
	}
	return w.ops.SetDCB(ctx, netdev, pfc, trust)
}

func (w *world) SetECN(ctx context.Context, netdev, point string, prio int, on bool) error {
	if err := w.step("SetECN %s %s %d %v", netdev, point, prio, on); err != nil {
		return err
	}
	return netops.ECNSysfs{Root: w.root}.SetECN(ctx, netdev, point, prio, on)
}

// qosWorld is newWorld whose RoCE PF ens42np0 has DCB at its default
// (trust pcp, PFC off) and ECN's reaction point off on priority 3.
func qosWorld(t *testing.T) *world {
	w := newWorld(t)
	w.ops.AddLink(netops.Host, netops.Link{Name: "ens42np0", MTU: 9000}, false)
	w.ops.SetDCBOf("ens42np0", netops.DCB{PFCCap: 8})
	if err := fakesysfs.SetECN(w.root, "ens42np0", fakesysfs.ECN{RP: 0xf7, NP: 0xff, CNPDSCP: 48, CNPPrio: 6}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) qosApplier() *Applier {
	a := w.applier()
	a.DCB, a.ECN = w, w
	return a
}

// qosState is what the PF's lossless configuration reads as.
func (w *world) qosState() string {
	d, err := w.ops.DCB(context.Background(), "ens42np0")
	e, eerr := w.fs.RoCEECN("ens42np0")
	return fmt.Sprintf("%s (%v); ecn rp %08b np %08b (%v)", d, err, e.RP, e.NP, eerr)
}

const roceQoS = "pfs:\n- pciAddress: \"0000:2a:00.0\"\n  numVFs: 0\n  qos: {trust: dscp, pfc: [3]}\n"

func TestApplySetsPFCTrustAndECNOnceWithTheNetopsFake(t *testing.T) {
	t.Parallel()
	w := qosWorld(t)
	ctx := context.Background()
	res, err := w.qosApplier().Apply(ctx, policy(t, roceQoS))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0000:2a:00.0: dcb trust pcp, PFC off -> trust dscp, PFC on 3",
		"0000:2a:00.0: ecn roce_rp priority 3 off -> on",
	}
	if diff := cmp.Diff(want, changeStrings(res)); diff != "" {
		t.Errorf("changes (-want +got)\n%s", diff)
	}
	if got, want := w.qosState(), "trust dscp, PFC on 3 (<nil>); ecn rp 11111111 np 11111111 (<nil>)"; got != want {
		t.Errorf("after apply: %s, want %s", got, want)
	}
	if res, err := w.qosApplier().Apply(ctx, policy(t, roceQoS)); err != nil || len(res.Changes) != 0 {
		t.Errorf("second run: %q, %v", changeStrings(res), err)
	}
	// Back to trust pcp with PFC off: the DSCP map goes.
	res, err = w.qosApplier().Apply(ctx, policy(t, strings.Replace(roceQoS, "{trust: dscp, pfc: [3]}", "{trust: pcp, pfc: []}", 1)))
	if err != nil || len(res.Changes) != 1 || w.qosState() != "trust pcp, PFC off (<nil>); ecn rp 11111111 np 11111111 (<nil>)" {
		t.Errorf("to pcp: %q, %v: %s", changeStrings(res), err, w.qosState())
	}
}

// A run that fails at any write leaves what it did, and the next run
// finishes it to the state of a clean run.
func TestApplyQoSFailingAtEveryStepWithTheNetopsFake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clean := qosWorld(t)
	if _, err := clean.qosApplier().Apply(ctx, policy(t, roceQoS)); err != nil {
		t.Fatal(err)
	}
	want, steps := clean.qosState(), clean.steps
	if steps != 2 {
		t.Fatalf("a clean run took %d steps: %q", steps, clean.calls)
	}
	for k := 1; k <= steps; k++ {
		t.Run(fmt.Sprint("fail-at-", k), func(t *testing.T) {
			t.Parallel()
			w := qosWorld(t)
			w.failAt = k
			if _, err := w.qosApplier().Apply(ctx, policy(t, roceQoS)); !errors.Is(err, errInjected) {
				t.Fatalf("failed run: %v", err)
			}
			w.failAt = 0
			if _, err := w.qosApplier().Apply(ctx, policy(t, roceQoS)); err != nil {
				t.Fatalf("next run after failing at %s: %v", w.calls[k-1], err)
			}
			if got := w.qosState(); got != want {
				t.Fatalf("after failing at %s and a new run: %s, want %s", w.calls[k-1], got, want)
			}
			if res, err := w.qosApplier().Apply(ctx, policy(t, roceQoS)); err != nil || len(res.Changes) != 0 {
				t.Fatalf("third run: %q, %v", changeStrings(res), err)
			}
		})
	}
}

func TestApplyQoSRefusesInfiniBandAndAMissingECN(t *testing.T) {
	t.Parallel()
	w := qosWorld(t)
	ctx := context.Background()
	_, err := w.qosApplier().Apply(ctx, policy(t, "pfs:\n- pciAddress: \"0000:18:00.0\"\n  numVFs: 0\n  qos: {pfc: [3]}\n"))
	if err == nil || !strings.Contains(err.Error(), "this PF is InfiniBand") {
		t.Errorf("InfiniBand PF: %v", err)
	}
	// The third NIC's ecn/ files gone, as on an upstream kernel's mlx5.
	w.ops.AddLink(netops.Host, netops.Link{Name: "ens59np0", MTU: 9000}, false)
	w.ops.SetDCBOf("ens59np0", netops.DCB{PFCCap: 8, PFC: 1 << 3, DSCP: netops.DefaultDSCPMap()})
	if err := fakesysfs.RemoveECN(w.root, "ens59np0"); err != nil {
		t.Fatal(err)
	}
	_, err = w.qosApplier().Apply(ctx, policy(t, "pfs:\n- pciAddress: \"0000:3b:00.0\"\n  numVFs: 0\n  qos: {pfc: [3]}\n"))
	if err == nil || !strings.Contains(err.Error(), "has no ecn/ files") {
		t.Errorf("no ecn/: %v", err)
	}
	if w.steps != 0 {
		t.Errorf("wrote %q", w.calls)
	}
}
