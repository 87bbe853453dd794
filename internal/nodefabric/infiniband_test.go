package nodefabric

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/ibneighbor/ibneighbortest"
	"github.com/railyard-io/railyard/internal/lldp"
)

// InfiniBand ports' neighbors come from ibneighbortest.Fake, a fake
// smpquery answering with outputs written in smpquery's format; no test
// here needs infiniband-diags or an InfiniBand port.

func answers(m map[string]string) map[ibneighbortest.Key]ibneighbortest.Answer {
	out := map[ibneighbortest.Key]ibneighbortest.Answer{}
	for k, v := range m {
		ca, op, _ := strings.Cut(k, " ")
		out[ibneighbortest.Key{CA: ca, Port: 1, Op: op}] = ibneighbortest.Answer{Out: v}
	}
	return out
}

func TestWatchOnceAsksInfiniBandPortsTheirSwitchFakeSmpquery(t *testing.T) {
	t.Parallel()
	leaf1 := ibneighbortest.Node{Type: "Switch", GUID: 0x0002c9030000a001, NumPorts: 41, LocalPort: 7}
	leaf2 := ibneighbortest.Node{Type: "Switch", GUID: 0x0002c9030000a002, NumPorts: 41, LocalPort: 7}
	host := ibneighbortest.Node{Type: "Channel Adapter", GUID: 0xb83fd20300a1b2c4, NumPorts: 1, LocalPort: 1}
	fake := &ibneighbortest.Fake{Answers: answers(map[string]string{
		"mlx5_1 nodeinfo": ibneighbortest.NodeInfo(leaf1), "mlx5_1 nodedesc": ibneighbortest.NodeDesc("Quantum Mellanox Technologies"),
		"mlx5_2 nodeinfo": ibneighbortest.NodeInfo(leaf2), "mlx5_2 nodedesc": ibneighbortest.NodeDesc("Quantum Mellanox Technologies"),
		"mlx5_3 nodeinfo": ibneighbortest.NodeInfo(host), "mlx5_3 nodedesc": ibneighbortest.NodeDesc("gpu-node-8 mlx5_0"),
		"mlx5_4 portinfo": ibneighbortest.PortInfo(1, "Down", "Polling"),
	})}
	var published []fabric.Port
	w := Watch{
		Ports: func() []fabric.Port {
			return []fabric.Port{
				{Rail: 0, NIC: "mlx5_0", Netdev: "eth0", LinkLayer: "Ethernet"},
				{Rail: 1, NIC: "mlx5_1", Netdev: "ib1", LinkLayer: "InfiniBand"}, // IPoIB netdev: never listened on
				{Rail: 2, NIC: "mlx5_2", LinkLayer: "InfiniBand"},                // no netdev: asked all the same
				{Rail: 3, NIC: "mlx5_3", LinkLayer: "InfiniBand"},                // back to back
				{Rail: 4, NIC: "mlx5_4", LinkLayer: "InfiniBand"},                // no cable
				{Rail: -1, NIC: "0000:c1:00.0", LinkLayer: "InfiniBand"},         // no RDMA device
			}
		},
		Listen: func(_ context.Context, netdevs []string) []lldp.Result {
			if diff := cmp.Diff([]string{"eth0"}, netdevs); diff != "" {
				t.Errorf("listened on (-want +got):\n%s", diff)
			}
			return []lldp.Result{{Port: "eth0", Neighbor: &lldp.Neighbor{SystemName: "leaf-0", PortID: "swp3"}}}
		},
		InfiniBand: fake,
		Publish:    func(_ context.Context, p []fabric.Port) (bool, error) { published = p; return true, nil },
		Wait:       time.Second,
	}
	if _, _, err := w.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The switch is the node GUID: both leaves have the same NodeDesc.
	want := []fabric.Port{
		{Rail: 0, NIC: "mlx5_0", Netdev: "eth0", LinkLayer: "Ethernet", Switch: "leaf-0", SwitchPort: "swp3"},
		{Rail: 1, NIC: "mlx5_1", Netdev: "ib1", LinkLayer: "InfiniBand", Switch: "0x0002c9030000a001", SwitchPort: "7"},
		{Rail: 2, NIC: "mlx5_2", LinkLayer: "InfiniBand", Switch: "0x0002c9030000a002", SwitchPort: "7"},
		{Rail: 3, NIC: "mlx5_3", LinkLayer: "InfiniBand", NoNeighbor: `mlx5_3 port 1: the node at hop 1 is not a switch: Channel Adapter 0xb83fd20300a1b2c4 port 1 ("gpu-node-8 mlx5_0"), a back-to-back cable to another host's Channel Adapter`},
		{Rail: 4, NIC: "mlx5_4", LinkLayer: "InfiniBand", NoNeighbor: "mlx5_4 port 1: the port is down (LinkState Down, PhysLinkState Polling): no neighbor answers"},
		{Rail: -1, NIC: "0000:c1:00.0", LinkLayer: "InfiniBand", NoNeighbor: `"0000:c1:00.0" is not an RDMA device name: no InfiniBand port to query`},
	}
	if diff := cmp.Diff(want, published); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	labels := fabric.Labels(published)
	if labels[fabric.RailLabelPrefix+"1"] != "0x0002c9030000a001" || labels[fabric.RailLabelPrefix+"2"] != "0x0002c9030000a002" {
		t.Errorf("labels %v: want rails 1 and 2 on their switches' GUIDs", labels)
	}
}

func TestNeighborsInfiniBandWithoutSmpquery(t *testing.T) {
	t.Parallel()
	ports := []fabric.Port{{Rail: 0, NIC: "mlx5_0", Netdev: "ib0", LinkLayer: "InfiniBand"}}
	got := Neighbors(context.Background(), ports, nil, &ibneighbortest.Fake{NotInstalled: true}, time.Second)
	if got[0].Switch != "" || !strings.Contains(got[0].NoNeighbor, "install infiniband-diags") {
		t.Errorf("not installed: %+v", got[0])
	}
	got = Neighbors(context.Background(), ports, nil, nil, time.Second)
	if got[0].Switch != "" || got[0].NoNeighbor != "InfiniBand: not asked (no smpquery runner)" {
		t.Errorf("no runner: %+v", got[0])
	}
}

// notify closes asked at its first run, then answers as its fake.
type notify struct {
	*ibneighbortest.Fake
	once  sync.Once
	asked chan struct{}
}

func (n *notify) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	n.once.Do(func() { close(n.asked) })
	return n.Fake.Run(ctx, name, args...)
}

// InfiniBand ports are asked while LLDP listens, and their answers do not
// wait for, nor end with, the LLDP wait.
func TestNeighborsAsksInfiniBandWhileListeningFakeSmpquery(t *testing.T) {
	t.Parallel()
	leaf := ibneighbortest.Node{Type: "Switch", GUID: 0x0002c9030000a001, NumPorts: 41, LocalPort: 7}
	ib := &notify{asked: make(chan struct{}), Fake: &ibneighbortest.Fake{Answers: answers(map[string]string{
		"mlx5_1 nodeinfo": ibneighbortest.NodeInfo(leaf), "mlx5_1 nodedesc": ibneighbortest.NodeDesc("leaf-ib-1"),
	})}}
	ports := []fabric.Port{{Rail: 0, NIC: "mlx5_0", Netdev: "eth0", LinkLayer: "Ethernet"}, {Rail: 1, NIC: "mlx5_1", LinkLayer: "InfiniBand"}}
	listen := func(ctx context.Context, _ []string) []lldp.Result {
		select {
		case <-ib.asked:
		case <-ctx.Done():
			t.Error("the InfiniBand port was not asked while LLDP listened")
		}
		return nil
	}
	got := Neighbors(context.Background(), ports, listen, ib, time.Minute)
	if got[1].Switch != "0x0002c9030000a001" {
		t.Errorf("InfiniBand port: %+v", got[1])
	}

	// A wait already over bounds LLDP only.
	got = Neighbors(context.Background(), ports[1:], func(context.Context, []string) []lldp.Result { return nil }, ib.Fake, 0)
	if got[0].Switch != "0x0002c9030000a001" {
		t.Errorf("InfiniBand port with no wait: %+v", got[0])
	}
}
