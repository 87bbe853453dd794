package nodefabric

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/lldp"
)

func ports(leaves ...string) []fabric.Port {
	var out []fabric.Port
	for i, l := range leaves {
		out = append(out, fabric.Port{Rail: i, NIC: "mlx5_" + string(rune('0'+i)), Netdev: "eth" + string(rune('0'+i)), Switch: l})
	}
	return out
}

// These tests use client-go's fake clientset (its object tracker applies
// the merge patches); the multi-node e2e publishes on a real apiserver.
func TestPublishWritesOnlyFabricKeysFakeClientset(t *testing.T) {
	t.Parallel()
	cs := k8sfake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1",
		Labels:      map[string]string{"kubernetes.io/hostname": "gpu-1", "rail.railyard.io/7": "old-leaf", fabric.LeafSetLabel: "ls-old"},
		Annotations: map[string]string{"other": "kept"}}})
	p := Publisher{Client: cs, Node: "gpu-1"}
	ctx := context.Background()

	changed, err := p.Publish(ctx, ports("leaf-0", "leaf-1"))
	if err != nil || !changed {
		t.Fatalf("Publish = %v, %v; want a change", changed, err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "gpu-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := fabric.Labels(ports("leaf-0", "leaf-1"))
	want["kubernetes.io/hostname"] = "gpu-1"
	if diff := cmp.Diff(want, n.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if n.Annotations["other"] != "kept" {
		t.Errorf("another annotation changed: %v", n.Annotations)
	}
	got, err := fabric.DecodePorts(n.Annotations[fabric.PortsAnnotation])
	if err != nil || len(got) != 2 || got[1].Switch != "leaf-1" {
		t.Errorf("ports annotation: %+v, %v", got, err)
	}

	before := len(cs.Actions())
	changed, err = p.Publish(ctx, ports("leaf-0", "leaf-1"))
	if err != nil || changed {
		t.Errorf("second Publish = %v, %v; want no change", changed, err)
	}
	for _, a := range cs.Actions()[before:] {
		if a.GetVerb() == "patch" {
			t.Errorf("an unchanged publish sent a patch")
		}
	}

	// The neighbors go away (a port lost its cable): the labels go too.
	if _, err := p.Publish(ctx, []fabric.Port{{Rail: 0, NIC: "mlx5_0", NoNeighbor: "no LLDP frame"}}); err != nil {
		t.Fatal(err)
	}
	n, _ = cs.CoreV1().Nodes().Get(ctx, "gpu-1", metav1.GetOptions{})
	if diff := cmp.Diff(map[string]string{"kubernetes.io/hostname": "gpu-1"}, n.Labels); diff != "" {
		t.Errorf("labels after the neighbors left (-want +got):\n%s", diff)
	}
}

func TestPublishMissingNodeFakeClientset(t *testing.T) {
	t.Parallel()
	_, err := Publisher{Client: k8sfake.NewClientset(), Node: "nope"}.Publish(context.Background(), ports("leaf-0"))
	if err == nil {
		t.Fatal("Publish on a missing node succeeded")
	}
}

func TestWatchOnceListensWithinWaitAndPublishesNeighbors(t *testing.T) {
	t.Parallel()
	var published []fabric.Port
	w := Watch{
		Ports: func() []fabric.Port {
			return []fabric.Port{{Rail: 0, NIC: "mlx5_0", Netdev: "eth0"}, {Rail: 1, NIC: "mlx5_1"}}
		},
		Listen: func(ctx context.Context, netdevs []string) []lldp.Result {
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Second {
				t.Errorf("listen without the 1 s wait as its deadline")
			}
			if diff := cmp.Diff([]string{"eth0"}, netdevs); diff != "" {
				t.Errorf("listened on (-want +got):\n%s", diff)
			}
			return []lldp.Result{{Port: "eth0", Neighbor: &lldp.Neighbor{SystemName: "leaf-0", PortID: "swp3"}}}
		},
		Publish: func(_ context.Context, p []fabric.Port) (bool, error) { published = p; return true, nil },
		Wait:    time.Second,
	}
	if _, _, err := w.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []fabric.Port{{Rail: 0, NIC: "mlx5_0", Netdev: "eth0", Switch: "leaf-0", SwitchPort: "swp3"},
		{Rail: 1, NIC: "mlx5_1", NoNeighbor: "no netdev to hear LLDP on"}}
	if diff := cmp.Diff(want, published); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
}

func TestWatchRunRetriesAfterAFailedRoundAndStops(t *testing.T) {
	t.Parallel()
	var rounds atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan error, 10)
	w := Watch{
		Ports:  func() []fabric.Port { return nil },
		Listen: func(context.Context, []string) []lldp.Result { return nil },
		Publish: func(context.Context, []fabric.Port) (bool, error) {
			if rounds.Add(1) == 1 {
				return false, errors.New("apiserver unavailable")
			}
			return false, nil
		},
		Wait: time.Millisecond, Interval: time.Millisecond,
		Report: func(_ []fabric.Port, _ bool, err error) {
			select { // never block Run: the test reads only the first rounds
			case reports <- err:
			default:
			}
		},
	}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	if err := <-reports; err == nil {
		t.Error("the failed round was not reported")
	}
	if err := <-reports; err != nil {
		t.Errorf("the next round: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop after its context ended")
	}
}
