package nodefabric

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/lldp"
)

// A port that starts hearing a second neighbor (a rogue LLDP sender on
// rail 1's link) is published with both, through client-go's fake
// clientset, round after round, whichever of them spoke first: its rail
// label keeps naming the leaf it named before (sorting alone would name
// "rogue"), the leaf set stays, the annotation lists both neighbors with
// their ports, and when the rogue goes the port is as before.
func TestWatchKeepsTheLabelOfAPortHearingTwoNeighborsFakeClientset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := k8sfake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}})
	pub := Publisher{Client: cs, Node: "gpu-1"}
	rogue := lldp.Neighbor{SystemName: "rogue", ChassisID: "02:00:00:00:00:01", PortID: "eth0"}
	round := 0
	listen := func(_ context.Context, netdevs []string) []lldp.Result {
		out := (&rounds{}).listen(context.Background(), netdevs)
		switch {
		case round == 0 || round == 5:
		case round%2 == 1: // the rogue speaks first
			out[1].Others = []lldp.Neighbor{*out[1].Neighbor}
			out[1].Neighbor = &rogue
		default:
			out[1].Others = []lldp.Neighbor{rogue}
		}
		return out
	}
	w := &Watch{Ports: railPorts, Listen: listen, Publish: pub.Publish, Previous: pub.Previous, HoldRounds: 3, Wait: 1}
	labels := func() map[string]string {
		t.Helper()
		if _, _, err := w.Once(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, "gpu-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Labels
	}
	healthy := labels()
	if healthy[fabric.RailLabelPrefix+"1"] != "su1-leaf1" {
		t.Fatalf("round 0: %v", healthy)
	}
	for round = 1; round <= 4; round++ {
		if diff := cmp.Diff(healthy, labels()); diff != "" {
			t.Errorf("round %d, rail 1 hearing two neighbors (-want +got):\n%s", round, diff)
		}
		ports, err := pub.Previous(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p := ports[1]
		if p.Switch != "su1-leaf1" || p.SwitchPort != "swp9" || !cmp.Equal(p.Switches, []string{"rogue", "su1-leaf1"}) ||
			!cmp.Equal(p.SwitchPorts, []string{"eth0", "swp9"}) {
			t.Errorf("round %d: rail 1 in the annotation %+v; want su1-leaf1 port swp9 named, both neighbors listed with their ports", round, p)
		}
	}
	round = 5
	if diff := cmp.Diff(healthy, labels()); diff != "" {
		t.Errorf("the rogue gone (-want +got):\n%s", diff)
	}
	if ports, err := pub.Previous(ctx); err != nil || ports[1].Switches != nil || ports[1].SwitchPorts != nil || ports[1].Switch != "su1-leaf1" {
		t.Errorf("the rogue gone: rail 1 %+v, %v; want su1-leaf1 alone", ports[1], err)
	}
}

func TestKeepPublished(t *testing.T) {
	t.Parallel()
	two := fabric.Port{Rail: 1, NIC: "mlx5_1", Switch: "a", SwitchPort: "p1",
		Switches: []string{"a", "b", "b"}, SwitchPorts: []string{"p1", "p2", "p3"}}
	for _, tc := range []struct {
		name       string
		q          fabric.Port
		sw, swPort string
	}{
		{"published b port p3", fabric.Port{Switch: "b", SwitchPort: "p3"}, "b", "p3"},
		{"published b on another port", fabric.Port{Switch: "b", SwitchPort: "p9"}, "b", "p2"},
		{"degraded rail, last on b", fabric.Port{LastSwitch: "b"}, "b", "p2"},
		{"published c, not heard now", fabric.Port{Switch: "c"}, "a", "p1"},
		{"nothing published", fabric.Port{}, "a", "p1"},
	} {
		got := keepPublished(two, tc.q)
		if got.Switch != tc.sw || got.SwitchPort != tc.swPort || !cmp.Equal(got.Switches, two.Switches) {
			t.Errorf("%s: %s port %s (%v); want %s port %s and the list kept", tc.name, got.Switch, got.SwitchPort, got.Switches, tc.sw, tc.swPort)
		}
	}
}
