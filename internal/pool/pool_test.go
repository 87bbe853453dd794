package pool

import (
	"context"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

func ptr[T any](v T) *T { return &v }

func ids(ds []Device) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func selectIn(t *testing.T, root string, p v1alpha1.Pool) []Device {
	t.Helper()
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	return s.Select(topo)
}

// TestSelectorsOnGeneratedDGXH100 selects from a generated DGX H100 sysfs
// tree (8 CX-7 NDR PFs 15b3:1021 with VFs 101e, 2 CX-6 dual-port 101b
// with VFs 101c, an Intel E810 with irdma), 2 VFs per PF.
func TestSelectorsOnGeneratedDGXH100(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pool v1alpha1.Pool
		want []string
	}{
		{"pf name with VF range", v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{PFNames: []string{"ibp24s0#1", "ibp64s0"}}},
			[]string{"0000:18:00.2", "0000:40:00.1", "0000:40:00.2"}},
		{"VFs by their PF's device ID and NUMA", v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{Devices: []string{"101b"}, NUMANodes: []int{1}}},
			[]string{"0000:aa:00.2", "0000:aa:00.3", "0000:aa:00.4", "0000:aa:00.5"}},
		{"ethernet VFs", v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{LinkLayers: []string{"Ethernet"}}},
			[]string{"0000:29:00.4", "0000:29:00.5", "0000:aa:00.4", "0000:aa:00.5"}},
		{"PF by PCI address and vendor", v1alpha1.Pool{DeviceKind: "pf", Selectors: v1alpha1.Selectors{Vendors: []string{"8086"}, PCIAddresses: []string{"0000:82:00.1", "0000:18:00.0"}}},
			[]string{"0000:82:00.1"}},
		{"VF by PF address", v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{PCIAddresses: []string{"0000:9a:00.0"}}},
			[]string{"0000:9a:00.1", "0000:9a:00.2"}},
		{"VF by PF address as nvidia-smi writes it", v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{PCIAddresses: []string{"00000000:9A:00.0"}}},
			[]string{"0000:9a:00.1", "0000:9a:00.2"}},
		{"PFs by driver and pf name", v1alpha1.Pool{DeviceKind: "pf", Selectors: v1alpha1.Selectors{Drivers: []string{"ice"}, PFNames: []string{"ens6f0#3"}}},
			[]string{"0000:82:00.0"}},
		{"not RDMA capable", v1alpha1.Pool{DeviceKind: "pf", Selectors: v1alpha1.Selectors{RDMACapable: ptr(false)}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ids(selectIn(t, root, c.pool))
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}

	all := selectIn(t, root, v1alpha1.Pool{DeviceKind: "vf", Selectors: v1alpha1.Selectors{RDMACapable: ptr(true)}})
	if len(all) != 24 {
		t.Fatalf("%d RDMA VFs, want 24", len(all))
	}
	d := all[0]
	if d.ID != "0000:18:00.1" || d.PF != "0000:18:00.0" || d.VFIndex != 0 || d.PFDevice != 0x1021 || d.RDMA == "" || d.Uverbs == "" || !d.Healthy || d.LinkLayer != "InfiniBand" {
		t.Errorf("first VF = %+v", d)
	}

	// Port of the PF down: its VFs become unhealthy, the others stay healthy.
	if err := fakesysfs.SetPortState(root, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	for _, d := range selectIn(t, root, v1alpha1.Pool{DeviceKind: "vf"}) {
		if want := d.PF != "0000:18:00.0"; d.Healthy != want {
			t.Errorf("%s healthy=%v (%s), want %v", d.ID, d.Healthy, d.Reason, want)
		}
	}
	// The VF's own port down.
	if err := fakesysfs.SetPortState(root, "mlx5_0", 1, fakesysfs.PortActive); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPortState(root, all[1].RDMA, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	for _, d := range selectIn(t, root, v1alpha1.Pool{DeviceKind: "vf"}) {
		if want := d.ID != all[1].ID; d.Healthy != want {
			t.Errorf("%s healthy=%v (%s), want %v", d.ID, d.Healthy, d.Reason, want)
		}
	}
}

func TestCompileRejectsBadSelectors(t *testing.T) {
	for _, p := range []v1alpha1.Pool{
		{Name: "a/b", DeviceKind: "sf"},
		{Name: "a/b", Selectors: v1alpha1.Selectors{Vendors: []string{"xyz"}}},
		{Name: "a/b", Selectors: v1alpha1.Selectors{PFNames: []string{"x#5-1"}}},
	} {
		if _, err := Compile(p); err == nil {
			t.Errorf("Compile(%+v) accepted", p)
		}
	}
}

// TestVFOwnDeviceID uses a hand-built inventory in which the VF's own PCI
// device ID is known (101e under a 1021 PF): either ID selects the VF.
func TestVFOwnDeviceID(t *testing.T) {
	port := []topology.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "InfiniBand"}}
	topo := topology.Build(topology.Inventory{
		HostBridges: []topology.HostBridge{{Name: "pci0000:00", NUMA: 0}},
		Devices: []topology.PCIDevice{
			{Address: "0000:18:00.0", Vendor: 0x15b3, Device: 0x1021, HostBridge: "pci0000:00"},
			{Address: "0000:18:00.1", Vendor: 0x15b3, Device: 0x101e, HostBridge: "pci0000:00"},
		},
		NICs: []topology.NIC{{PCI: "0000:18:00.0", Vendor: 0x15b3, Device: 0x1021, Netdev: "ibp24s0", Netdevs: []string{"ibp24s0"},
			RDMA: "mlx5_0", Uverbs: "uverbs0", LinkLayer: "InfiniBand", Ports: port,
			VFs: []topology.VF{{Index: 0, PCI: "0000:18:00.1", RDMA: "mlx5_1", Uverbs: "uverbs1", Ports: port}}}},
	})
	for _, dev := range []string{"101e", "1021"} {
		s, err := Compile(v1alpha1.Pool{Name: "a/b", DeviceKind: "vf", Selectors: v1alpha1.Selectors{Devices: []string{dev}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(s.Select(topo)); len(got) != 1 || got[0] != "0000:18:00.1" {
			t.Errorf("devices [%s]: %v", dev, got)
		}
	}
	s, _ := Compile(v1alpha1.Pool{Name: "a/b", DeviceKind: "vf", Selectors: v1alpha1.Selectors{Devices: []string{"1017"}}})
	if got := s.Select(topo); len(got) != 0 {
		t.Errorf("devices [1017]: %v", ids(got))
	}
}
