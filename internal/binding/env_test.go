package binding

import (
	"slices"
	"testing"
)

// TestContainerEnv: two pools given in rail order; per pool (sorted) the
// PCI list, its _INFO and RDMA list keep that order; NCCL_IB_HCA lists
// every RDMA device once, in the order given, only when asked; a device
// without an RDMA device is in PCIDEVICE_* and _INFO without "rdma".
func TestContainerEnv(t *testing.T) {
	devs := []EnvDevice{
		{Resource: "railyard.io/rdma_vf", PCI: "0000:18:00.2", RDMA: "mlx5_13", Nodes: []string{"uverbs15", "rdma_cm"}},
		{Resource: "example.com/b", PCI: "0000:9a:00.0", RDMA: "mlx5_9", Nodes: []string{"uverbs9", "umad9"}},
		{Resource: "railyard.io/rdma_vf", PCI: "0000:05:00.1", RDMA: "mlx5_2", Nodes: []string{"uverbs2"}},
		{Resource: "example.com/b", PCI: "0000:3a:00.0"},
	}
	got, err := ContainerEnv(devs, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PCIDEVICE_EXAMPLE_COM_B=0000:9a:00.0,0000:3a:00.0",
		`PCIDEVICE_EXAMPLE_COM_B_INFO={"0000:3a:00.0":{"generic":{"deviceID":"0000:3a:00.0"}},` +
			`"0000:9a:00.0":{"generic":{"deviceID":"0000:9a:00.0"},"rdma":{"rdma_dev":"mlx5_9","umad":"/dev/infiniband/umad9","uverbs":"/dev/infiniband/uverbs9"}}}`,
		"RAILYARD_RDMA_DEVICES_EXAMPLE_COM_B=mlx5_9",
		"PCIDEVICE_RAILYARD_IO_RDMA_VF=0000:18:00.2,0000:05:00.1",
		`PCIDEVICE_RAILYARD_IO_RDMA_VF_INFO={"0000:05:00.1":{"generic":{"deviceID":"0000:05:00.1"},"rdma":{"rdma_dev":"mlx5_2","uverbs":"/dev/infiniband/uverbs2"}},` +
			`"0000:18:00.2":{"generic":{"deviceID":"0000:18:00.2"},"rdma":{"rdma_cm":"/dev/infiniband/rdma_cm","rdma_dev":"mlx5_13","uverbs":"/dev/infiniband/uverbs15"}}}`,
		"RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF=mlx5_13,mlx5_2",
		"NCCL_IB_HCA==mlx5_13,mlx5_9,mlx5_2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ContainerEnv =\n%q\nwant\n%q", got, want)
	}
	noHCA, err := ContainerEnv(devs, false)
	if err != nil || !slices.Equal(noHCA, want[:len(want)-1]) {
		t.Errorf("without NCCL_IB_HCA: %q, %v", noHCA, err)
	}
	if none, err := ContainerEnv(nil, true); err != nil || len(none) != 0 {
		t.Errorf("no devices: %q, %v", none, err)
	}
}
