package nodefabric

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/lldp"
)

func TestHold(t *testing.T) {
	t.Parallel()
	heard := fabric.Port{Rail: 3, NIC: "mlx5_3", Netdev: "eth3", Switch: "leaf-3", SwitchPort: "swp7"}
	quiet := fabric.Port{Rail: 3, NIC: "mlx5_3", Netdev: "eth3", NoNeighbor: "no LLDP frame"}
	held := func(n int) fabric.Port {
		p := quiet
		p.Switch, p.SwitchPort, p.StaleRounds = "leaf-3", "swp7", n
		return p
	}
	dead := quiet
	dead.LastSwitch = "leaf-3"
	gone := heard
	gone.Switch, gone.SwitchPort, gone.NoNeighbor = "", "", goneNIC
	goneHeld, goneDead := gone, gone
	goneHeld.Switch, goneHeld.SwitchPort, goneHeld.StaleRounds = "leaf-3", "swp7", 1
	goneDead.LastSwitch = "leaf-3"
	recabled := heard
	recabled.Switch = "leaf-9"
	otherRail := quiet
	otherRail.Rail = 4
	for _, tc := range []struct {
		name      string
		prev      []fabric.Port
		fresh     fabric.Port
		rounds    int
		withdrawn bool
		want      []fabric.Port
	}{
		{"heard", []fabric.Port{held(2)}, heard, 3, false, []fabric.Port{heard}},
		{"first round", nil, quiet, 3, false, []fabric.Port{quiet}},
		{"never heard", []fabric.Port{quiet}, quiet, 3, false, []fabric.Port{quiet}},
		{"missed one round", []fabric.Port{heard}, quiet, 3, false, []fabric.Port{held(1)}},
		{"missed the third round", []fabric.Port{held(2)}, quiet, 3, false, []fabric.Port{held(3)}},
		{"past the hold", []fabric.Port{held(3)}, quiet, 3, false, []fabric.Port{dead}},
		{"no hold", []fabric.Port{heard}, quiet, 0, false, []fabric.Port{dead}},
		{"withdrawn", []fabric.Port{heard}, quiet, 3, true, []fabric.Port{dead}},
		{"withdrawn while held", []fabric.Port{held(1)}, quiet, 3, true, []fabric.Port{dead}},
		{"still dead", []fabric.Port{dead}, quiet, 3, false, []fabric.Port{dead}},
		{"back", []fabric.Port{dead}, heard, 3, false, []fabric.Port{heard}},
		{"recabled", []fabric.Port{dead}, recabled, 3, false, []fabric.Port{recabled}},
		{"on another rail now", []fabric.Port{heard}, otherRail, 3, false, []fabric.Port{otherRail}},
		{"NIC gone", []fabric.Port{heard}, fabric.Port{Rail: 0, NIC: "mlx5_0", Switch: "leaf-0"}, 3, false,
			[]fabric.Port{{Rail: 0, NIC: "mlx5_0", Switch: "leaf-0"}, goneHeld}},
		{"NIC gone past the hold", []fabric.Port{goneHeld}, fabric.Port{Rail: 0, NIC: "mlx5_0", Switch: "leaf-0"}, 1, false,
			[]fabric.Port{{Rail: 0, NIC: "mlx5_0", Switch: "leaf-0"}, goneDead}},
	} {
		var withdrawn map[string]bool
		if tc.withdrawn {
			withdrawn = map[string]bool{"mlx5_3": true}
		}
		got := Hold(tc.prev, []fabric.Port{tc.fresh}, tc.rounds, withdrawn)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// railPorts is a node's 8 rail ports without neighbors, as discovery
// lists them.
func railPorts() []fabric.Port {
	out := make([]fabric.Port, 8)
	for r := range out {
		out[r] = fabric.Port{Rail: r, NIC: fmt.Sprintf("mlx5_%d", r), Netdev: fmt.Sprintf("eth%d", r), LinkLayer: "Ethernet"}
	}
	return out
}

// rounds is a fake LLDP listener: each call hears every netdev's leaf
// except the netdevs of the current round's silent set, and answers
// shut (a shutdown frame) for those of its shutdown set.
type rounds struct {
	silent, shutdown map[string]bool
}

func (r *rounds) listen(_ context.Context, netdevs []string) []lldp.Result {
	var out []lldp.Result
	for i, n := range netdevs {
		switch {
		case r.shutdown[n]:
			out = append(out, lldp.Result{Port: n, Err: fmt.Errorf("port %s: %w from chassis x port y", n, lldp.ErrShutdown)})
		case r.silent[n]:
			out = append(out, lldp.Result{Port: n, Err: fmt.Errorf("port %s: %w within 35s", n, lldp.ErrNoFrame)})
		default:
			out = append(out, lldp.Result{Port: n, Neighbor: &lldp.Neighbor{SystemName: fmt.Sprintf("su1-leaf%d", i), PortID: "swp9"}})
		}
	}
	return out
}

// The publisher, rounds in a row through client-go's fake clientset: a
// port missing one round keeps every label (its rail, the leaf set);
// missing longer than the hold it loses its rail label, the node keeps
// its leaf set and gains the degraded-rails label; a shutdown frame
// degrades at once; a restarted publisher (a new Watch) goes on counting
// from the Node's annotation; a heard port brings every label back; the
// unit label and other keys are never touched.
func TestWatchHoldsLabelsThroughQuietRoundsFakeClientset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := k8sfake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1",
		Labels: map[string]string{"kubernetes.io/hostname": "gpu-1", fabric.UnitLabel: "su1-leaf0"}}})
	pub := Publisher{Client: cs, Node: "gpu-1"}
	heard := &rounds{}
	watch := func() *Watch {
		return &Watch{Ports: railPorts, Listen: heard.listen, Publish: pub.Publish, Previous: pub.Previous, HoldRounds: 3, Wait: 1}
	}
	w := watch()
	labels := func(round string) map[string]string {
		t.Helper()
		if _, _, err := w.Once(ctx); err != nil {
			t.Fatalf("%s: %v", round, err)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, "gpu-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Labels
	}
	healthy := labels("all heard")
	if healthy[fabric.LeafSetLabel] == "" || healthy[fabric.RailLabelPrefix+"3"] != "su1-leaf3" || healthy[fabric.UnitLabel] != "su1-leaf0" {
		t.Fatalf("all heard: %v", healthy)
	}

	heard.silent = map[string]bool{"eth3": true}
	if diff := cmp.Diff(healthy, labels("rail 3 quiet for a round")); diff != "" {
		t.Errorf("rail 3 quiet for a round (-want +got):\n%s", diff)
	}
	ports, err := pub.Previous(ctx)
	if err != nil || ports[3].StaleRounds != 1 || ports[3].Switch != "su1-leaf3" || ports[3].NoNeighbor == "" {
		t.Errorf("annotation after a quiet round: %+v, %v; want rail 3 held, stale 1 round, saying why", ports[3], err)
	}
	labels("rail 3 quiet for 2 rounds")
	w = watch() // the publisher restarts: the hold goes on from the annotation
	if diff := cmp.Diff(healthy, labels("rail 3 quiet for 3 rounds")); diff != "" {
		t.Errorf("rail 3 quiet for 3 rounds (-want +got):\n%s", diff)
	}

	degraded := map[string]string{fabric.DegradedRailsLabel: "3"}
	for k, v := range healthy {
		if k != fabric.RailLabelPrefix+"3" {
			degraded[k] = v
		}
	}
	if diff := cmp.Diff(degraded, labels("rail 3 quiet for 4 rounds")); diff != "" {
		t.Errorf("rail 3 past the hold (-want +got):\n%s", diff)
	}

	heard.shutdown = map[string]bool{"eth5": true}
	delete(degraded, fabric.RailLabelPrefix+"5")
	degraded[fabric.DegradedRailsLabel] = "3_5"
	if diff := cmp.Diff(degraded, labels("rail 5 shut down")); diff != "" {
		t.Errorf("rail 5 withdrawn by a shutdown frame (-want +got):\n%s", diff)
	}

	heard.silent, heard.shutdown = nil, nil
	if diff := cmp.Diff(healthy, labels("all heard again")); diff != "" {
		t.Errorf("all heard again (-want +got):\n%s", diff)
	}
}

// Without Previous, Watch holds from its own last round; a failed publish
// is not taken as published.
func TestWatchHoldsInMemoryWithoutPrevious(t *testing.T) {
	t.Parallel()
	heard := &rounds{}
	var published []fabric.Port
	fail := false
	w := &Watch{Ports: railPorts, Listen: heard.listen, HoldRounds: 1, Wait: 1,
		Publish: func(_ context.Context, p []fabric.Port) (bool, error) {
			if fail {
				return false, errors.New("apiserver unavailable")
			}
			published = p
			return true, nil
		}}
	ctx := context.Background()
	if _, _, err := w.Once(ctx); err != nil {
		t.Fatal(err)
	}
	heard.silent = map[string]bool{"eth0": true}
	fail = true
	if _, _, err := w.Once(ctx); err == nil {
		t.Fatal("the failed publish was not reported")
	}
	fail = false
	if _, _, err := w.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if p := published[0]; p.Switch != "su1-leaf0" || p.StaleRounds != 1 {
		t.Errorf("rail 0 after a failed and a quiet round: %+v; want held for its first round", p)
	}
	if _, _, err := w.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if p := published[0]; p.Switch != "" || p.LastSwitch != "su1-leaf0" {
		t.Errorf("rail 0 past a hold of 1: %+v", p)
	}
}
