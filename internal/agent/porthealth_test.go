package agent

import (
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// A link that flaps between two port polls (its state file reads ACTIVE
// every time) shows only in its error counters: the agent marks the NIC
// degraded, the device plugin advertises the PF's VFs Unhealthy with
// railyard_nic_degraded 1, and once the hold passes without a new rise
// they are Healthy again. Faked: the counter files (mlx5's, in the
// generated tree, advanced by the test as a flapping link would), kubelet
// (registration stub and PodResources server).
func TestErrorCountersDegradeAFlappingNIC(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	if err := fakesysfs.WriteCounters(e.sysfs, "mlx5_0", fakesysfs.MLX5); err != nil {
		t.Fatal(err)
	}
	r, vfs := startVFAgent(t, e, `errorCounters:
  window: 30s
  hold: 3s
`)
	vfs.next(t, "4 healthy VFs", 5*time.Second, func(h map[string]string) bool {
		return len(h) == 4 && h["0000:05:00.1"] == pluginapi.Healthy
	})
	// The first discovery, before the VFs were advertised, read the
	// counters once: the base the flap is counted from.
	if err := fakesysfs.AdvanceCounters(e.sysfs, "mlx5_0", 1, fakesysfs.MLX5, map[string]uint64{"counters/link_downed": 1}); err != nil {
		t.Fatal(err)
	}
	vfs.next(t, "05:00.x unhealthy", 10*time.Second, func(h map[string]string) bool {
		return h["0000:05:00.1"] == pluginapi.Unhealthy && h["0000:05:00.2"] == pluginapi.Unhealthy && h["0000:0c:00.1"] == pluginapi.Healthy
	})
	_, body := httpGet(t, "http://"+r.metrics.String()+"/metrics")
	if !strings.Contains(body, `railyard_nic_degraded{pci="0000:05:00.0",rdma="mlx5_0"} 1`) ||
		!strings.Contains(body, `railyard_nic_degraded{pci="0000:0c:00.0",rdma="mlx5_1"} 0`) {
		t.Errorf("metrics lack the degraded NIC:\n%s", grepLines(body, "railyard_nic_degraded"))
	}
	if log := r.log.String(); !strings.Contains(log, "NIC degraded by its error counters") || !strings.Contains(log, "link_downed +1") {
		t.Errorf("no log of the degraded NIC and why:\n%s", log)
	}
	vfs.next(t, "05:00.x healthy after the hold", 15*time.Second, func(h map[string]string) bool {
		return h["0000:05:00.1"] == pluginapi.Healthy && h["0000:05:00.2"] == pluginapi.Healthy
	})
}

// startVFAgent starts the agent on e's tree (roce-8gpu-4nic) with kubelet
// stubs, one vf pool of its first two PFs, a 1 s resync and section (more
// configuration lines), and watches the pool's ListAndWatch.
func startVFAgent(t *testing.T, e *env, section string) (*running, stream) {
	t.Helper()
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	podrestest.Start(t, e.podSock)
	config := `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
resyncInterval: 1s
` + section + `pools:
- name: railyard.io/rdma_vf
  deviceKind: vf
  selectors:
    pfNames: [enp5s0f0np0, enp12s0f0np0]
`
	r := start(t, e.args(e.writeConfig(t, config)), nil)
	reg.WaitAll(t, vfRes)
	return r, watch(t, dial(t, e.pluginDir+"/"+deviceplugin.SocketName(vfRes)))
}
