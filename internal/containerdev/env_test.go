package containerdev

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEnv: devices given out of order are listed in rail order (rail,
// then PF, then PCI; no rail last) in every list; per pool (sorted) the
// PCI list, its _INFO and the RDMA list; NCCL_IB_HCA lists every RDMA
// device once, only when asked; a device without an RDMA device is in
// PCIDEVICE_* and _INFO without "rdma"; shares of one NIC name it once.
func TestEnv(t *testing.T) {
	t.Parallel()
	devs := []Device{
		{Resource: "railyard.io/rdma_vf", PCI: "0000:05:00.1", PF: "0000:05:00.0", Rail: -1, RDMA: "mlx5_2", Nodes: []string{"uverbs2"}},
		{Resource: "example.com/b", PCI: "0000:9a:00.0", PF: "0000:9a:00.0", Rail: 1, RDMA: "mlx5_9", Nodes: []string{"uverbs9", "umad9"}},
		{Resource: "railyard.io/rdma_vf", PCI: "0000:18:00.2", PF: "0000:18:00.0", Rail: 0, RDMA: "mlx5_13", Nodes: []string{"uverbs15", "rdma_cm"}},
		{Resource: "example.com/b", PCI: "0000:3a:00.0", PF: "0000:3a:00.0", Rail: 1},
		{Resource: "example.com/b", PCI: "0000:9a:00.0", PF: "0000:9a:00.0", Rail: 1, RDMA: "mlx5_9", Nodes: []string{"uverbs9", "umad9"}},
	}
	want := []string{
		"PCIDEVICE_EXAMPLE_COM_B=0000:3a:00.0,0000:9a:00.0",
		`PCIDEVICE_EXAMPLE_COM_B_INFO={"0000:3a:00.0":{"generic":{"deviceID":"0000:3a:00.0"}},` +
			`"0000:9a:00.0":{"generic":{"deviceID":"0000:9a:00.0"},"rdma":{"rdma_dev":"mlx5_9","umad":"/dev/infiniband/umad9","uverbs":"/dev/infiniband/uverbs9"}}}`,
		"RAILYARD_RDMA_DEVICES_EXAMPLE_COM_B=mlx5_9",
		"PCIDEVICE_RAILYARD_IO_RDMA_VF=0000:18:00.2,0000:05:00.1",
		`PCIDEVICE_RAILYARD_IO_RDMA_VF_INFO={"0000:05:00.1":{"generic":{"deviceID":"0000:05:00.1"},"rdma":{"rdma_dev":"mlx5_2","uverbs":"/dev/infiniband/uverbs2"}},` +
			`"0000:18:00.2":{"generic":{"deviceID":"0000:18:00.2"},"rdma":{"rdma_cm":"/dev/infiniband/rdma_cm","rdma_dev":"mlx5_13","uverbs":"/dev/infiniband/uverbs15"}}}`,
		"RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF=mlx5_13,mlx5_2",
		"NCCL_IB_HCA==mlx5_13,mlx5_9,mlx5_2",
	}
	env := Env(devs, EnvOptions{NCCLIBHCA: true})
	if diff := cmp.Diff(want, env.Strings()); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:len(want)-1], Env(devs, EnvOptions{}).Strings()); diff != "" {
		t.Errorf("Env without NCCL_IB_HCA (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"NCCL_IB_HCA": "=mlx5_13,mlx5_9,mlx5_2"}, filter(env.Map(), "NCCL_IB_HCA")); diff != "" {
		t.Errorf("Map (-want +got):\n%s", diff)
	}
	if got := Env(nil, EnvOptions{NCCLIBHCA: true, NCCL: NCCL{CrossNIC: new(0)}}); len(got) != 0 {
		t.Errorf("no devices: %q", got.Strings())
	}
	// NCCL_CROSS_NIC when set, last; 0 is a value, not "unset".
	got := Env(devs, EnvOptions{NCCLIBHCA: true, NCCL: NCCL{CrossNIC: new(0)}}).Strings()
	if diff := cmp.Diff(append(slices.Clone(want), "NCCL_CROSS_NIC=0"), got); diff != "" {
		t.Errorf("Env with NCCL_CROSS_NIC (-want +got):\n%s", diff)
	}
}

func filter(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// TestEnvNames: the SR-IOV device plugin's variable and Railyard's
// per-pool RDMA variable of a resource.
func TestEnvNames(t *testing.T) {
	t.Parallel()
	if got := EnvName("railyard.io/rdma_vf-a"); got != "PCIDEVICE_RAILYARD_IO_RDMA_VF_A" {
		t.Errorf("EnvName = %q", got)
	}
	if got := RDMAEnvName("railyard.io/rdma_vf-a"); got != "RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF_A" {
		t.Errorf("RDMAEnvName = %q", got)
	}
}
