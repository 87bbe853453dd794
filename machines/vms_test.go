package machines

import (
	"context"
	"slices"
	"testing"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// The cloud VM with an NCCL topology file: sysfs alone (the zero options)
// sees every GPU x HCA pair of a NUMA node as NODE, so its rails are NODE
// and no pair qualifies for GPUDirect RDMA; with the model's file each GPU's
// rail is the HCA Azure pairs it with, at PIX, and the pairs that were NODE
// become PIX (the pair) or PHB (same CPU), SYS staying SYS.
func TestNCCLTopologyChangesTheCloudVMView(t *testing.T) {
	ctx := context.Background()
	flat, err := TopologyWith(ctx, "azure-ndv5", 0, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	withFile, err := Topology(ctx, "azure-ndv5", 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Description("azure-ndv5")
	if err != nil {
		t.Fatal(err)
	}
	count := map[[2]string]int{}
	for i, l := range withFile.Links {
		f := flat.Links[i]
		if f.GPU != l.GPU || f.NIC != l.NIC {
			t.Fatalf("link %d: %s x %s vs %s x %s", i, f.GPU, f.NIC, l.GPU, l.NIC)
		}
		if f.Source != "" || l.Source != "nccl-topo" {
			t.Errorf("sources %q / %q", f.Source, l.Source)
		}
		count[[2]string{f.Class.String(), l.Class.String()}]++
	}
	// 8 GPUs x 8 HCAs, two NUMA nodes of 4+4: per GPU 1 PIX + 3 PHB
	// (NODE in sysfs) and 4 SYS.
	want := map[[2]string]int{{"NODE", "PIX"}: 8, {"NODE", "PHB"}: 24, {"SYS", "SYS"}: 32}
	if len(count) != len(want) {
		t.Errorf("class changes = %v, want %v", count, want)
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s -> %s: %d pairs, want %d", k[0], k[1], count[k], n)
		}
	}
	gpuLabel := map[string]string{}
	for _, r := range d.Roots {
		for _, c := range r.Children {
			if c.Label != "" {
				gpuLabel[c.Address] = c.Label
			}
		}
	}
	for i, r := range withFile.Rails {
		best := d.BestNIC[gpuLabel[r.GPU]]
		if r.Class != topology.PIX || len(best) != 1 || r.NIC != best[0]+":00:00.0" {
			t.Errorf("rail %+v, want PIX to %v", r, best)
		}
		if fr := flat.Rails[i]; fr.Class != topology.NODE || fr.Class.GPUDirect() {
			t.Errorf("flat rail %+v, want NODE", fr)
		}
	}
	if len(flat.Warnings) != 0 || len(withFile.Warnings) != 0 {
		t.Errorf("warnings: flat %v, with the file %v", flat.Warnings, withFile.Warnings)
	}
}

// The vSphere VM's PVRDMA function (15ad:0820, class 0x0280, no netdev of
// its own) is an RDMA NIC whose netdev is the paired vmxnet3 on function 0;
// the management vmxnet3 and the paired one are no RDMA NICs.
func TestPVRDMAVM(t *testing.T) {
	_, topo := discover(t, "vsphere-pvrdma", 0)
	if len(topo.NICs) != 1 || len(topo.GPUs) != 1 {
		t.Fatalf("%d NICs, %d GPUs; want 1 and 1", len(topo.NICs), len(topo.GPUs))
	}
	n := topo.NICs[0]
	if n.PCI != "0000:13:00.1" || n.Vendor != 0x15ad || n.Device != 0x0820 || n.Driver != "vmw_pvrdma" || n.RDMA != "vmw_pvrdma0" {
		t.Errorf("NIC identity = %+v", n)
	}
	if n.Netdev != "ens224" || n.NetdevPCI != "0000:13:00.0" || len(n.Netdevs) != 0 {
		t.Errorf("netdev %q on %q (own %v), want ens224 on 0000:13:00.0", n.Netdev, n.NetdevPCI, n.Netdevs)
	}
	if n.LinkLayer != "Ethernet" || n.Uverbs == "" || n.TotalVFs != 0 || len(n.Ports) != 1 || !slices.Equal(n.Ports[0].RoCEv2GIDs, []int{1, 3}) {
		t.Errorf("NIC ports = %+v, uverbs %q, totalvfs %d", n.Ports, n.Uverbs, n.TotalVFs)
	}
	if n.NUMA != -1 {
		t.Errorf("NUMA = %d, want -1 (no vNUMA)", n.NUMA)
	}
	g := topo.GPUs[0]
	if g.PCI != "0000:0b:00.0" || g.Device != 0x1eb8 {
		t.Errorf("GPU = %+v", g)
	}
	if r, _ := topo.Rail(g.PCI); r.NIC != n.PCI || r.Class != topology.PHB {
		t.Errorf("rail = %+v, want PHB to the PVRDMA function", r)
	}
	if d, ok := topo.Device("0000:13:00.0"); !ok || d.Driver != "vmxnet3" {
		t.Errorf("paired vmxnet3 = %+v, %v", d, ok)
	}
}

// A port going DOWN on a real model: DGX A100 pairs two GPUs with two
// PXB HCAs. With mlx5_0 DOWN, both GPUs of the pair take mlx5_1 (ACTIVE,
// as close) instead of one of them keeping the dead port.
func TestDownHCAOnDGXA100(t *testing.T) {
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := WriteSysfs("dgx-a100", dir, 0); err != nil {
		t.Fatal(err)
	}
	rdmaOf := func(topo *topology.Topology, gpu int) string {
		n, _ := topo.NIC(topo.Rails[gpu].NIC)
		return n.RDMA
	}
	before, err := discovery.Discover(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{rdmaOf(before, 0), rdmaOf(before, 1)}; !slices.Equal(got, []string{"mlx5_0", "mlx5_1"}) {
		t.Fatalf("rails of GPU0, GPU1 = %v", got)
	}
	if err := fakesysfs.SetPortState(dir, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	after, err := discovery.Discover(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{rdmaOf(after, 0), rdmaOf(after, 1)}; !slices.Equal(got, []string{"mlx5_1", "mlx5_1"}) {
		t.Errorf("rails of GPU0, GPU1 with mlx5_0 DOWN = %v, want both on mlx5_1", got)
	}
	for i := 2; i < 8; i++ {
		if after.Rails[i] != before.Rails[i] {
			t.Errorf("GPU%d's rail moved: %+v -> %+v", i, before.Rails[i], after.Rails[i])
		}
	}
	for _, r := range after.Rails {
		if n, _ := after.NIC(r.NIC); n.RDMA == "mlx5_0" {
			t.Errorf("a GPU is still railed to the DOWN mlx5_0: %+v", r)
		}
	}
}
