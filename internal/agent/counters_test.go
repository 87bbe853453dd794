package agent

import (
	"regexp"
	"strings"
	"testing"
	"time"

	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// TestCountersOnMetricsNameTheHoldingPod: the agent's /metrics exports
// the RDMA port counters of the node's devices (internal/rdmastats); a VF
// that PodResources lists as allocated to a container carries its pod,
// namespace and container, and loses them when the pod is gone. Faked:
// the sysfs tree and its counter files (mlx5's names, advanced by the
// test), kubelet's PodResources answers.
func TestCountersOnMetricsNameTheHoldingPod(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	kubelettest.StartRegistrar(t, e.pluginDir)
	pr := podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, twoPools(""))), nil)

	topo := r.agent.Topology()
	nic := topo.NICs[0]
	if len(nic.VFs) == 0 || nic.VFs[0].RDMA == "" {
		t.Fatalf("the model's first NIC has no VF with an RDMA device: %+v", nic)
	}
	vf := nic.VFs[0]
	for _, rdma := range []string{nic.RDMA, vf.RDMA} {
		if err := fakesysfs.WriteCounters(e.sysfs, rdma, fakesysfs.MLX5); err != nil {
			t.Fatal(err)
		}
	}
	if err := fakesysfs.AdvanceCounters(e.sysfs, vf.RDMA, 1, fakesysfs.MLX5, map[string]uint64{"hw_counters/out_of_buffer": 7}); err != nil {
		t.Fatal(err)
	}
	pr.Set(&podresourcesapi.PodResources{Name: "trainer-0", Namespace: "ml", Containers: []*podresourcesapi.ContainerResources{{
		Name: "main", Devices: []*podresourcesapi.ContainerDevices{{ResourceName: vfRes, DeviceIds: []string{vf.PCI}}},
	}}})

	held := regexp.MustCompile(`railyard_rdma_out_of_buffer_total\{[^}]*container="main"[^}]*namespace="ml"[^}]*nic="` + regexp.QuoteMeta(vf.RDMA) + `"[^}]*pod="trainer-0"[^}]*\} 7`)
	text := metricsText(t, r)
	if !held.MatchString(text) {
		t.Fatalf("no out_of_buffer series of %s held by ml/trainer-0 with value 7 in /metrics:\n%s", vf.RDMA, grepLines(text, vf.RDMA))
	}
	if !strings.Contains(text, `nic="`+nic.RDMA+`"`) {
		t.Errorf("the PF %s's counters are not exported", nic.RDMA)
	}

	pr.Set()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(metricsText(t, r), `pod="trainer-0"`) {
		if time.Now().After(deadline) {
			t.Fatal("the pod's label outlived the pod in PodResources")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
