package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

const sharedRes = "railyard.io/rdma_shared"

// TestAgentAdvertisesSharesPerNIC runs the agent with a shared pool of two
// NICs of the generated roce-8gpu-4nic tree (sharedLimit 4) in merged
// mode (set by flags): kubelet's stand-ins see 4 shares per NIC, named by
// the NIC; an Allocate of one share gets the NIC's verbs device and a
// mounted NCCL configuration naming the NIC; a restarted agent advertises
// the same IDs.
func TestAgentAdvertisesSharesPerNIC(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 0)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	podrestest.Start(t, e.podSock)
	cfg := e.writeConfig(t, `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
pools:
- name: `+sharedRes+`
  deviceKind: shared
  sharedLimit: 4
  policy: spread
  selectors: {pciAddresses: ["0000:05:00.0", "0000:84:00.0"]}
`)
	stateDir := filepath.Join(e.dir, "state")
	args := append(e.args(cfg), "--nccl-ib-hca", "merged", "--state-dir", stateDir)
	ids := func() []string {
		reg.WaitAll(t, sharedRes)
		c := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(sharedRes)))
		h := watch(t, c).next(t, "8 shares", 5*time.Second, func(h map[string]string) bool { return len(h) == 8 })
		var out []string
		for id, health := range h {
			if health != pluginapi.Healthy {
				t.Errorf("%s is %s", id, health)
			}
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	r1 := start(t, args, nil)
	first := ids()
	want := []string{"0000:05:00.0-s0", "0000:05:00.0-s1", "0000:05:00.0-s2", "0000:05:00.0-s3",
		"0000:84:00.0-s0", "0000:84:00.0-s1", "0000:84:00.0-s2", "0000:84:00.0-s3"}
	if !slices.Equal(first, want) {
		t.Fatalf("shares %v, want %v", first, want)
	}
	c := dial(t, filepath.Join(e.pluginDir, deviceplugin.SocketName(sharedRes)))
	resp, err := c.Allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:84:00.0-s2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	car := resp.ContainerResponses[0]
	rdma := r1.agent.Topology().NICs[2] // 0000:84:00.0, the third NIC in PCI order
	if rdma.PCI != "0000:84:00.0" {
		t.Fatalf("third NIC is %s", rdma.PCI)
	}
	var nodes []string
	for _, d := range car.Devices {
		nodes = append(nodes, d.ContainerPath)
	}
	if !slices.Equal(nodes, []string{"/dev/infiniband/" + rdma.Uverbs, "/dev/infiniband/rdma_cm"}) {
		t.Errorf("device nodes %v, want %s and rdma_cm", nodes, rdma.Uverbs)
	}
	if car.Envs["NCCL_CONF_FILE"] != deviceplugin.NCCLConfPath || car.Envs["NCCL_IB_HCA"] != "" || len(car.Mounts) != 1 {
		t.Fatalf("merged mode response: envs %v mounts %v", car.Envs, car.Mounts)
	}
	if !strings.HasPrefix(car.Mounts[0].HostPath, filepath.Join(stateDir, "nccl")+"/") {
		t.Errorf("NCCL config %s is not under --state-dir %s", car.Mounts[0].HostPath, stateDir)
	}
	b, err := os.ReadFile(car.Mounts[0].HostPath)
	if err != nil || !strings.Contains(string(b), "\nNCCL_IB_HCA=="+rdma.RDMA+"\n") {
		t.Errorf("NCCL config %q (%v), want NCCL_IB_HCA==%s", b, err, rdma.RDMA)
	}
	r1.stop()
	start(t, args, nil)
	if second := ids(); !slices.Equal(first, second) {
		t.Errorf("IDs changed across restart:\n%v\n%v", first, second)
	}
}
