package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin/draplugintest"
	"github.com/railyard-io/railyard/internal/fabric"
)

// The DRA pools' railyard.io/leaf follows this node's
// railyard.io/fabric-ports annotation (what `railyard fabric publish`
// writes) through a watch on the Node: set, changed (a recabled port),
// ignored on another node, taken off with a logged error when it no longer
// decodes, and off when the annotation goes. The API server is client-go's
// fake clientset (no API server in unit tests); the multi-node e2e watches
// a real one.
func TestDRALeavesFollowTheNodesFabricPorts(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	kube := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", UID: "uid-b"}},
	)
	// The fake clientset drops what changes between an informer's list and
	// its watch (a real API server resumes from the list's version): the
	// test changes the Node only once the agent's watch is open.
	watching := make(chan struct{})
	var once sync.Once
	kube.PrependWatchReactor("nodes", func(clienttesting.Action) (bool, apiwatch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	draplugintest.DryRunSlices(kube, draplugintest.Release135)
	a, log, stop := startWithClient(t, e.draArgs(e.writeConfig(t, draConfig(e, "node-a"))), kube)
	defer stop()
	select {
	case <-watching:
	case <-time.After(15 * time.Second):
		t.Fatal("the agent did not watch its Node within 15s")
	}
	// The two PFs of the dra pool, by RDMA device name and PCI address.
	rdma := map[string]string{}
	for _, n := range a.Topology().NICs {
		if n.Netdev == "enp5s0f0np0" || n.Netdev == "enp12s0f0np0" {
			rdma[n.Netdev] = n.RDMA
			rdma[n.RDMA] = n.PCI
		}
	}
	first, second := rdma["enp5s0f0np0"], rdma["enp12s0f0np0"]
	if first == "" || second == "" {
		t.Fatalf("the model changed: dra pool PFs %v", rdma)
	}
	annotate := func(node, value string, set bool) {
		t.Helper()
		n, err := kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n = n.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if set {
			n.Annotations[fabric.PortsAnnotation] = value
		} else {
			delete(n.Annotations, fabric.PortsAnnotation)
		}
		if _, err := kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ports := func(leaf0, leaf1 string) string {
		t.Helper()
		s, err := fabric.EncodePorts([]fabric.Port{
			{Rail: 0, NIC: first, Netdev: "enp5s0f0np0", LinkLayer: "Ethernet", Switch: leaf0, SwitchPort: "swp1"},
			{Rail: 1, NIC: second, Netdev: "enp12s0f0np0", LinkLayer: "Ethernet", Switch: leaf1, SwitchPort: "swp1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// leaves reads each dra-pool PF's VFs' leaves from the fake API
	// server's slices, until want matches (by PF PCI address, "" for none).
	waitLeaves := func(what string, want map[string]string) {
		t.Helper()
		var got map[string]string
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			list, err := kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = map[string]string{}
			for _, s := range list.Items {
				for _, d := range s.Spec.Devices {
					pf := *d.Attributes[dra.AttrPFPCIAddress].StringValue
					leaf := ""
					if l, ok := d.Attributes[dra.AttrLeaf]; ok {
						leaf = *l.StringValue
					}
					if prev, seen := got[pf]; seen && prev != leaf {
						leaf = "VFs disagree: " + prev + ", " + leaf
					}
					got[pf] = leaf
				}
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
		}
		t.Fatalf("%s: leaves by PF %v, want %v\n%s", what, got, want, log)
	}
	pf0, pf1 := rdma[first], rdma[second]
	waitLeaves("no annotation", map[string]string{pf0: "", pf1: ""})

	annotate("node-a", ports("leaf-r0", "leaf-r1"), true)
	waitLeaves("annotated", map[string]string{pf0: "leaf-r0", pf1: "leaf-r1"})

	annotate("node-a", ports("leaf-r0", "Leaf R1/2"), true)
	waitLeaves("rail 1 recabled", map[string]string{pf0: "leaf-r0", pf1: fabric.LabelValue("Leaf R1/2")})

	annotate("node-b", ports("other-0", "other-1"), true)
	time.Sleep(200 * time.Millisecond)
	waitLeaves("another node annotated", map[string]string{pf0: "leaf-r0", pf1: fabric.LabelValue("Leaf R1/2")})

	annotate("node-a", `[{"rail":0,"nic":`, true)
	waitLeaves("garbled annotation", map[string]string{pf0: "", pf1: ""})
	if !strings.Contains(log.String(), "fabric ports do not decode") {
		t.Errorf("the garbled annotation was not logged:\n%s", log)
	}

	annotate("node-a", ports("leaf-r0", "leaf-r1"), true)
	waitLeaves("mended", map[string]string{pf0: "leaf-r0", pf1: "leaf-r1"})
	annotate("node-a", "", false)
	waitLeaves("annotation removed", map[string]string{pf0: "", pf1: ""})
}
