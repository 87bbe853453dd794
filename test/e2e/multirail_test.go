//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const (
	resRailA  = "railyard.io/e2e_rail_a"
	resRailB  = "railyard.io/e2e_rail_b"
	resShared = "railyard.io/e2e_shared"
	// The per-pool variables (containerdev.RDMAEnvName) and SR-IOV style
	// variables of those pools.
	envRDMARailA = "RAILYARD_RDMA_DEVICES_RAILYARD_IO_E2E_RAIL_A"
	envRDMARailB = "RAILYARD_RDMA_DEVICES_RAILYARD_IO_E2E_RAIL_B"
	envPCIRailA  = "PCIDEVICE_RAILYARD_IO_E2E_RAIL_A"
	envPCIRailB  = "PCIDEVICE_RAILYARD_IO_E2E_RAIL_B"
	envPCIShared = "PCIDEVICE_RAILYARD_IO_E2E_SHARED"
	ncclConfPath = "/etc/railyard/nccl.conf"
)

// TestMultiRailAndSharedWithRealKubelet runs bin/railyard-agent in
// "merged" mode against the real kubelet on the fake dgx-h100 tree, with
// two PF pools of three NICs each (one pool per NIC group, as SR-IOV
// deployments publish one pool per PF) and a shared pool of one NIC with
// sharedLimit 2.
//
// What containerd 1.6 (no CDI) lets this test see, and so what it checks:
// the per-pool variables and the merged NCCL configuration file (a plain
// bind mount) inside the containers, and, in kubelet's device checkpoint,
// that both pools' Allocate responses of a container carry the same mount
// and the same CDI device name, whose spec file the agent wrote with the
// merged NCCL_IB_HCA. The runtime-side CDI injection (NCCL_IB_HCA as an
// environment variable, containerd >= 1.7) is not exercised here.
func TestMultiRailAndSharedWithRealKubelet(t *testing.T) {
	c := suite.Cluster(t)
	ctx := framework.Context(t, 10*time.Minute)
	dir, err := os.MkdirTemp(c.RunDir(), "multirail-")
	if err != nil {
		t.Fatal(err)
	}
	env := newAgentEnv(t, dir)
	stateDir, cdiDir := filepath.Join(dir, "state"), filepath.Join(dir, "cdi")
	railA, railB, shared := pfPoolNames[0:3], pfPoolNames[3:6], pfPoolNames[7]
	cfg := fmt.Sprintf(`apiVersion: railyard.io/v1alpha1
kind: AgentConfig
nodeName: railyard-e2e
ncclIBHCA: merged
stateDir: %s
cdiSpecDir: %s
pools:
- {name: %s, deviceKind: pf, policy: spread, selectors: {pfNames: [%s]}}
- {name: %s, deviceKind: pf, policy: spread, selectors: {pfNames: [%s]}}
- {name: %s, deviceKind: shared, sharedLimit: 2, policy: spread, selectors: {pfNames: [%s]}}
`, stateDir, cdiDir, resRailA, strings.Join(railA, ", "), resRailB, strings.Join(railB, ", "), resShared, shared)
	if err := os.WriteFile(env.Config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	railPods := []string{"rail-0", "rail-1", "rail-2"}
	sharePods := []string{"share-0", "share-1", "share-2"}
	t.Cleanup(func() {
		cctx := framework.Context(t, 2*time.Minute)
		_ = c.DeletePods(cctx, "default", append(slices.Clone(railPods), sharePods...)...)
		_ = env.stopAgent(c)
	})
	env.startAgent(t, c)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for res, n := range map[corev1.ResourceName]int64{resRailA: 3, resRailB: 3, resShared: 2} {
		if err := c.WaitForNodeAllocatable(wctx, res, n); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a container taking two pools gets one NCCL config naming both NICs in rail order", func(t *testing.T) {
		rail := railIndexes(t, env.SysfsDir)
		for _, name := range railPods {
			pod := framework.BusyboxPod("default", name, "sleep", "3600")
			framework.WithResourceLimit(pod, resRailA, 1)
			framework.WithResourceLimit(pod, resRailB, 1)
			if _, err := c.CreatePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
		orders := map[string]int{}
		for _, name := range railPods {
			p, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning)
			if err != nil {
				t.Fatal(err)
			}
			a, b := podEnv(ctx, t, c, name, envPCIRailA), podEnv(ctx, t, c, name, envPCIRailB)
			if got := podEnv(ctx, t, c, name, envRDMARailA); got != env.RDMA[a] {
				t.Errorf("%s: %s=%q, want %s (the RDMA device of %s)", name, envRDMARailA, got, env.RDMA[a], a)
			}
			if got := podEnv(ctx, t, c, name, envRDMARailB); got != env.RDMA[b] {
				t.Errorf("%s: %s=%q, want %s (the RDMA device of %s)", name, envRDMARailB, got, env.RDMA[b], b)
			}
			if got := podEnv(ctx, t, c, name, "NCCL_CONF_FILE"); got != ncclConfPath {
				t.Errorf("%s: NCCL_CONF_FILE=%q", name, got)
			}
			if got := unsetOr(ctx, t, c, name, "NCCL_IB_HCA"); got != "unset" {
				t.Errorf("%s: NCCL_IB_HCA=%q in the environment; it would override the merged file", name, got)
			}
			pfs := []string{a, b}
			slices.SortFunc(pfs, func(x, y string) int { return rail[x] - rail[y] })
			want := "NCCL_IB_HCA==" + env.RDMA[pfs[0]] + "," + env.RDMA[pfs[1]]
			conf, err := c.Exec(ctx, "default", name, "main", "cat", ncclConfPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(conf, "\n"+want+"\n") {
				t.Errorf("%s: %s is\n%s\nwant the line %s", name, ncclConfPath, conf, want)
			}
			group := checkpointGroup(t, string(p.UID), stateDir, resRailA, resRailB)
			spec, err := os.ReadFile(filepath.Join(cdiDir, "railyard.io-nccl-"+group+".json"))
			if err != nil || !strings.Contains(string(spec), `"`+want+`"`) {
				t.Errorf("%s: CDI spec of group %s: %s (%v), want env %s", name, group, spec, err, want)
			}
			orders[allocationOrder(t, c, group)]++
		}
		t.Logf("kubelet's allocation orders (first pool -> second): %v", orders)
	})

	t.Run("two pods share one NIC and both see its verbs device", func(t *testing.T) {
		pf := env.PFs[shared]
		for _, name := range sharePods[:2] {
			pod := framework.WithResourceLimit(framework.BusyboxPod("default", name, "sleep", "3600"), resShared, 1)
			if _, err := c.CreatePod(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range sharePods[:2] {
			if _, err := c.WaitForPodPhase(ctx, "default", name, corev1.PodRunning); err != nil {
				t.Fatal(err)
			}
			if got := podEnv(ctx, t, c, name, envPCIShared); got != pf {
				t.Errorf("%s: %s=%q, want the NIC %s", name, envPCIShared, got, pf)
			}
			if got, want := devNodes(ctx, t, c, name), env.expectedNodes(t, pf); !slices.Equal(got, want) {
				t.Errorf("%s: /dev/infiniband = %v, want %v", name, got, want)
			}
			conf, err := c.Exec(ctx, "default", name, "main", "cat", ncclConfPath)
			if err != nil || !strings.Contains(conf, "\nNCCL_IB_HCA=="+env.RDMA[pf]+"\n") {
				t.Errorf("%s: %s = %q (%v), want NCCL_IB_HCA==%s", name, ncclConfPath, conf, err, env.RDMA[pf])
			}
		}
		third := framework.WithResourceLimit(framework.BusyboxPod("default", sharePods[2], "true"), resShared, 1)
		if _, err := c.CreatePod(ctx, third); err != nil {
			t.Fatal(err)
		}
		ev, err := c.WaitForEvent(ctx, "default", sharePods[2], "FailedScheduling")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ev.Message, "Insufficient "+resShared) {
			t.Errorf("FailedScheduling %q does not name Insufficient %s", ev.Message, resShared)
		}
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, sharePods[2], metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != "" {
			t.Errorf("third share pod on %q (%v), want unscheduled (sharedLimit 2)", p.Spec.NodeName, err)
		}
	})
}

// railIndexes maps each NIC of the tree to its rail index (the first GPU
// it serves in the topology's rails), read through discovery.
func railIndexes(t *testing.T, sysfs string) map[string]int {
	t.Helper()
	topo, err := discovery.Discover(context.Background(), sysfs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for i, r := range topo.Rails {
		if _, ok := out[r.NIC]; !ok {
			out[r.NIC] = i
		}
	}
	for _, n := range topo.NICs {
		if _, ok := out[n.PCI]; !ok {
			out[n.PCI] = len(topo.Rails) + 1000 // no rail: last
		}
	}
	return out
}

// unsetOr returns an environment variable of the pod's container, or
// "unset".
func unsetOr(ctx context.Context, t *testing.T, c *framework.Cluster, pod, name string) string {
	t.Helper()
	out, err := c.Exec(ctx, "default", pod, "main", "sh", "-c", `printf '%s' "${`+name+`-unset}"`)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkpointGroup reads kubelet's device manager checkpoint and returns the
// NCCL group both resources' cached Allocate responses of the pod name:
// the same mounted file and the same CDI device in each (the bytes are
// protobuf, in which strings appear as they are).
func checkpointGroup(t *testing.T, uid, stateDir string, resources ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.DevicePluginDir, "kubelet_internal_checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	var cp struct {
		Data struct {
			PodDeviceEntries []struct {
				PodUID, ContainerName, ResourceName string
				AllocResp                           []byte
			}
		}
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	confRE := regexp.MustCompile(regexp.QuoteMeta(filepath.Join(stateDir, "nccl")) + `/([A-Za-z0-9_.-]+)\.conf`)
	groups := map[string]string{}
	for _, e := range cp.Data.PodDeviceEntries {
		if e.PodUID != uid || !slices.Contains(resources, e.ResourceName) {
			continue
		}
		m := confRE.FindSubmatch(e.AllocResp)
		if m == nil {
			t.Fatalf("kubelet's cached Allocate response of %s names no NCCL config under %s", e.ResourceName, stateDir)
		}
		group := string(m[1])
		if !strings.Contains(string(e.AllocResp), "railyard.io/nccl="+group) {
			t.Errorf("cached Allocate response of %s lacks the CDI device railyard.io/nccl=%s", e.ResourceName, group)
		}
		groups[e.ResourceName] = group
	}
	if len(groups) != len(resources) {
		t.Fatalf("checkpoint has %d of the pod's resources %v: %v", len(groups), resources, groups)
	}
	first := groups[resources[0]]
	for r, g := range groups {
		if g != first {
			t.Errorf("kubelet got group %s from %s but %s from %s: it would keep one of them", first, resources[0], g, r)
		}
	}
	return first
}

// allocationOrder returns "<first pool> -> <second pool>" of a group from
// the agent's log line of the allocation that joined it.
func allocationOrder(t *testing.T, c *framework.Cluster, group string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.LogDir(), "railyard-agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "joins the NCCL group") && strings.Contains(l, "group="+group+" ") {
			second := regexp.MustCompile(`resource=(\S+)`).FindStringSubmatch(l)
			first := regexp.MustCompile(`with=\[(\S+)\]`).FindStringSubmatch(l)
			if second != nil && first != nil {
				return first[1] + " -> " + second[1]
			}
		}
	}
	t.Errorf("the agent's log has no join line for group %s", group)
	return "?"
}
