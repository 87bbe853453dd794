package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

const noneRes = "example.com/none"

// emptyPools: a VF pool on a PF that has no VFs yet (as a migrated SR-IOV
// device plugin config that selected a PF would be), a PF pool that
// matches, and a pool whose vendor is on no NIC of the node.
const emptyPools = `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
resyncInterval: 1h
pools:
- name: railyard.io/rdma_vf
  deviceKind: vf
  selectors:
    pfNames: [enp5s0f0np0]
- name: railyard.io/rdma_pf
  deviceKind: pf
  selectors:
    pfNames: [enp132s0f0np0]
- name: example.com/none
  deviceKind: pf
  selectors:
    vendors: ["8086"]
`

// waitMetrics reads /metrics until every line in wants is present.
func waitMetrics(t *testing.T, r *running, what string, wants ...string) {
	t.Helper()
	var missing []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body := httpGet(t, "http://"+r.metrics.String()+"/metrics")
		missing = missing[:0]
		for _, w := range wants {
			if !strings.Contains(body, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range missing {
		t.Errorf("%s: /metrics lacks %s", what, w)
	}
}

// warnLines returns the log lines of empty-pool warnings for resource.
func warnLines(log, resource string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, `msg="pool matches no device`) &&
			strings.Contains(l, "resource="+resource+" ") {
			out = append(out, l)
		}
	}
	return out
}

// TestEmptyPoolWarnsAndShowsInMetrics runs the agent on a generated
// roce-8gpu-4nic tree without VFs. Faked as in TestAgentOnGeneratedTree:
// kubelet's Registration service, PodResources, the char devices.
func TestEmptyPoolWarnsAndShowsInMetrics(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 0)
	reg := kubelettest.StartRegistrar(t, e.pluginDir)
	podrestest.Start(t, e.podSock)
	r := start(t, e.args(e.writeConfig(t, emptyPools)), nil)
	reg.WaitAll(t, vfRes, pfRes, noneRes)

	waitMetrics(t, r, "at start",
		`railyard_pool_empty{resource="railyard.io/rdma_vf"} 1`,
		`railyard_pool_empty{resource="railyard.io/rdma_pf"} 0`,
		`railyard_pool_empty{resource="example.com/none"} 1`,
		`railyard_pool_devices{health="Healthy",resource="railyard.io/rdma_vf"} 0`,
		`railyard_pool_devices{health="Unhealthy",resource="railyard.io/rdma_vf"} 0`,
		`railyard_pool_devices{health="Healthy",resource="example.com/none"} 0`,
		`railyard_pool_devices{health="Healthy",resource="railyard.io/rdma_pf"} 1`,
		`railyard_warnings_total{reason="pool_empty"} 2`,
		`railyard_warnings_total{reason="pools_overlap"} 0`,
	)
	vfWarn := warnLines(r.log.String(), vfRes)
	if len(vfWarn) != 1 || !strings.Contains(vfWarn[0], "deviceKind=vf") || !strings.Contains(vfWarn[0], `selectors="pfNames=[enp5s0f0np0]" nics=4`) ||
		!strings.Contains(vfWarn[0], `hint="the selectors match 1 PF(s) that have no matching VFs: create VFs, or set deviceKind: pf (or shared)`) {
		t.Errorf("VF pool warning lines: %q", vfWarn)
	}
	noneWarn := warnLines(r.log.String(), noneRes)
	if len(noneWarn) != 1 || !strings.Contains(noneWarn[0], `selectors="vendors=[8086]"`) || strings.Contains(noneWarn[0], "hint=") {
		t.Errorf("vendor pool warning lines (want one, without a hint): %q", noneWarn)
	}
	if w := warnLines(r.log.String(), pfRes); len(w) != 0 {
		t.Errorf("the matching PF pool warned: %q", w)
	}

	// VFs appear on enp5s0f0np0: the VF pool fills, the other stays empty
	// and is not warned about again.
	if err := fakesysfs.AddVFs(e.sysfs, "0000:05:00.0", 2); err != nil {
		t.Fatal(err)
	}
	waitMetrics(t, r, "after VFs appeared",
		`railyard_pool_empty{resource="railyard.io/rdma_vf"} 0`,
		`railyard_pool_empty{resource="example.com/none"} 1`,
		`railyard_warnings_total{reason="pool_empty"} 2`,
	)
	if !strings.Contains(r.log.String(), `msg="pool matches devices again" resource=railyard.io/rdma_vf devices=2`) {
		t.Errorf("no recovery line in\n%s", r.log)
	}
	if n := len(warnLines(r.log.String(), noneRes)); n != 1 {
		t.Errorf("the still-empty pool was warned about %d times", n)
	}
}
