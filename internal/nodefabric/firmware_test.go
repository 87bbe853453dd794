package nodefabric

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/lldp"
	"github.com/railyard-io/railyard/machines"
)

// A round publishes each port's model and firmware (from the node's
// generated dgx-h100 tree) in the ports annotation through client-go's
// fake clientset, and a card flashed since changes the annotation.
func TestWatchPublishesModelAndFirmwareFakeClientset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	topo, err := machines.Topology(ctx, "dgx-h100", 0)
	if err != nil {
		t.Fatal(err)
	}
	cs := k8sfake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}})
	current := fabric.PortsOf(topo)
	w := Watch{
		Ports:   func() []fabric.Port { return current },
		Listen:  func(context.Context, []string) []lldp.Result { return nil },
		Publish: Publisher{Client: cs, Node: "gpu-1"}.Publish,
		Wait:    1,
	}
	published := func() []fabric.Port {
		t.Helper()
		n, err := cs.CoreV1().Nodes().Get(ctx, "gpu-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ports, err := fabric.DecodePorts(n.Annotations[fabric.PortsAnnotation])
		if err != nil {
			t.Fatal(err)
		}
		return ports
	}
	if _, changed, err := w.Once(ctx); err != nil || !changed {
		t.Fatalf("first round: changed %v, %v", changed, err)
	}
	got := published()
	cx7 := 0
	for _, p := range got {
		if p.Model == "" || p.Firmware == "" {
			t.Errorf("port %s published without model or firmware: %+v", p.NIC, p)
		}
		if p.Model == "15b3:1021" && p.Firmware == "28.39.1002" {
			cx7++
		}
	}
	if cx7 != 8 {
		t.Errorf("%d ConnectX-7 ports on 28.39.1002, want dgx-h100's 8: %+v", cx7, got)
	}

	current = append([]fabric.Port(nil), current...)
	current[0].Firmware = "28.42.1000" // the card was flashed
	if _, changed, err := w.Once(ctx); err != nil || !changed {
		t.Fatalf("after a flash: changed %v, %v; want the annotation patched", changed, err)
	}
	if got := published(); got[0].Firmware != "28.42.1000" {
		t.Errorf("after a flash: %s publishes %q", got[0].NIC, got[0].Firmware)
	}
}
