package fabric

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/lldp"
	"github.com/railyard-io/railyard/machines"
)

func TestPortsOfRailOptimizedMachines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		machine string
		rails   int
	}{
		{machine: "dgx-h100", rails: 8}, // 8 GPUs, 8 compute NICs, one per GPU
		{machine: "dgx-a100", rails: 8},
	} {
		t.Run(tc.machine, func(t *testing.T) {
			topo, err := machines.Topology(context.Background(), tc.machine, 0)
			if err != nil {
				t.Fatal(err)
			}
			ports := PortsOf(topo)
			seen := map[int]string{}
			for _, p := range ports {
				if p.Rail < 0 {
					continue
				}
				if other, dup := seen[p.Rail]; dup {
					t.Errorf("rail %d on %s and %s", p.Rail, other, p.NIC)
				}
				seen[p.Rail] = p.NIC
			}
			if len(seen) != tc.rails {
				t.Fatalf("%d rails, want %d: %+v", len(seen), tc.rails, ports)
			}
			// Rail i is the NIC of GPU i: the rail order follows the GPUs.
			for gpu := 0; gpu < tc.rails; gpu++ {
				nic, ok := topo.NIC(topo.Rails[gpu].NIC)
				if !ok {
					t.Fatalf("rail NIC %s not in the model", topo.Rails[gpu].NIC)
				}
				if seen[gpu] != nic.RDMA {
					t.Errorf("rail %d is %s, want GPU %d's NIC %s", gpu, seen[gpu], gpu, nic.RDMA)
				}
			}
		})
	}
}

func TestWithNeighbors(t *testing.T) {
	t.Parallel()
	ports := []Port{{Rail: 0, NIC: "mlx5_0", Netdev: "eth0"}, {Rail: 1, NIC: "mlx5_1", Netdev: "eth1"},
		{Rail: 2, NIC: "mlx5_2"}, {Rail: 3, NIC: "mlx5_3", Netdev: "eth3"}}
	got := WithNeighbors(ports, []lldp.Result{
		{Port: "eth0", Neighbor: &lldp.Neighbor{SystemName: "leaf-0", ChassisID: "0c:42:a1:00:00:01", PortID: "swp1"}},
		{Port: "eth1", Err: errors.New("port eth1: no LLDP frame within 30s")},
	})
	want := []Port{
		{Rail: 0, NIC: "mlx5_0", Netdev: "eth0", Switch: "leaf-0", SwitchPort: "swp1"},
		{Rail: 1, NIC: "mlx5_1", Netdev: "eth1", NoNeighbor: "port eth1: no LLDP frame within 30s"},
		{Rail: 2, NIC: "mlx5_2", NoNeighbor: "no netdev to hear LLDP on"},
		{Rail: 3, NIC: "mlx5_3", Netdev: "eth3", NoNeighbor: "not listened on"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithNeighbors (-want +got):\n%s", diff)
	}
	if ports[0].Switch != "" {
		t.Error("WithNeighbors changed its input")
	}
}

func TestWithNeighborsInfiniBand(t *testing.T) {
	t.Parallel()
	p := Port{Rail: 0, NIC: "mlx5_0", Netdev: "ibp24s0", LinkLayer: "InfiniBand"}
	if p.HearsLLDP() {
		t.Error("an InfiniBand port hears LLDP")
	}
	got := WithNeighbors([]Port{p}, nil)
	if got[0].Switch != "" || !strings.Contains(got[0].NoNeighbor, "InfiniBand") {
		t.Errorf("InfiniBand port: %+v", got[0])
	}
}

// On an 8-GPU/4-NIC node each NIC serves two GPUs: its rail is its first
// GPU's index, the numbering the pools' devices and DRA's railyard.io/rail
// attribute use, so a claim's rail and a node's rail label agree.
func TestPortsOfNumbersRailsAsPoolsDo(t *testing.T) {
	t.Parallel()
	topo, err := machines.Topology(context.Background(), "roce-8gpu-4nic", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, p := range PortsOf(topo) {
		got = append(got, p.Rail)
	}
	if diff := cmp.Diff([]int{0, 2, 4, 6}, got); diff != "" {
		t.Errorf("rails (-want +got):\n%s", diff)
	}
}
