//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestAllocatedPFAttachedByRailyardCNI walks the delivery path end to end
// as Multus drives it: railyard-agent allocates a PF to a pod through the
// real kubelet, the pod's PCIDEVICE_ variable names it, and railyard-cni,
// given that address as deviceID, moves the PF's netdev into the pod's
// network namespace as net1 with an address from the real host-local; DEL
// brings it back. What is fake: the sysfs tree (the agent's and the
// plugin's), and the PF's netdev, which is a veth named like the PF
// (there is no RDMA NIC here); without the RDMA subsystem the plugin runs
// with "rdma": false. The test plays Multus (which is not on the module
// proxy): it calls the plugin through the real libcni with exactly the
// configuration and arguments Multus sends a delegate of a network with a
// resourceName, deviceID and pciBusID included (internal/cni/multustest).
func TestAllocatedPFAttachedByRailyardCNI(t *testing.T) {
	c := suite.Cluster(t)
	netnstest.Require(t)
	ctx := framework.Context(t, 5*time.Minute)
	dir, err := os.MkdirTemp(c.RunDir(), "attach-")
	if err != nil {
		t.Fatal(err)
	}
	env := newAgentEnv(t, dir)
	const podName = "attached"
	t.Cleanup(func() {
		_ = c.DeletePod(framework.Context(t, 2*time.Minute), "default", podName)
		_ = env.stopAgent(c)
	})
	// A previous test's agent may just have stopped: until the node status
	// shows its devices gone, allocatable still counts them, and a pod
	// admitted before the new agent registers fails (UnexpectedAdmissionError,
	// see docs/agent.md). Start from a node that shows none.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitForNodeAllocatable(wctx, resPF, 0); err != nil {
		t.Fatal(err)
	}
	env.startAgent(t, c)
	if err := c.WaitForNodeAllocatable(wctx, resPF, 8); err != nil {
		t.Fatal(err)
	}

	pod := framework.WithResourceLimit(framework.BusyboxPod("default", podName, "sleep", "3600"), resPF, 1)
	created, err := c.CreatePod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodPhase(ctx, "default", podName, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	pfs := podDevices(ctx, t, c, podName, envPF)
	if len(pfs) != 1 {
		t.Fatalf("%s = %v, want one PF", envPF, pfs)
	}
	pf, netdev := pfs[0], ""
	for name, addr := range env.PFs {
		if addr == pf {
			netdev = name
		}
	}
	if netdev == "" {
		t.Fatalf("allocated %s is not a PF of the pool %v", pf, env.PFs)
	}
	// The PF's netdev on the host: a veth with its name.
	netnstest.NewVeth(t, netdev, netnstest.NewNetns(t, "attachpeer"))
	netns := podNetns(t, string(created.UID))

	nad := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"rdma-e2e","type":"railyard-cni",
	 "sysfsRoot":%q,"stateDir":%q,"mtu":1400,
	 "capabilities":{"deviceID":true,"CNIDeviceInfoFile":true},
	 "ipam":{"type":"host-local","ranges":[[{"subnet":"10.219.0.0/24"}]],"dataDir":%q}}`,
		env.SysfsDir, filepath.Join(dir, "cni-state"), filepath.Join(dir, "ipam"))
	// The pod asks for the network as the chart lays it out: a NAD in
	// railyard-system named otherwise than its config.
	multus := newMultus(t, c, dir, "railyard-system/railyard-rdma-pf", []byte(nad), pf, multustest.Pod{
		Namespace: "default", Name: podName, UID: string(created.UID), SandboxID: "e2e-" + string(created.UID), Netns: netns,
	})
	res, err := multus.add(ctx)
	if err != nil {
		t.Fatalf("ADD as Multus sends it: %v", err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var result struct {
		Interfaces []struct {
			Name    string `json:"name"`
			Sandbox string `json:"sandbox"`
			PCIID   string `json:"pciID"`
		} `json:"interfaces"`
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("ADD result %s: %v", out, err)
	}
	if len(result.Interfaces) == 0 || result.Interfaces[0].Name != "net1" || result.Interfaces[0].PCIID != pf || len(result.IPs) != 1 {
		t.Fatalf("ADD result: %s", out)
	}
	addr := strings.Split(result.IPs[0].Address, "/")[0]
	if !strings.HasPrefix(addr, "10.219.0.") {
		t.Fatalf("address %s is not from the host-local range", result.IPs[0].Address)
	}

	// The pod sees net1 with that address and MTU; the host no longer has
	// the netdev.
	inPod, err := c.Exec(ctx, "default", podName, "main", "ip", "-o", "addr", "show", "dev", "net1")
	if err != nil {
		t.Fatalf("ip addr in the pod: %v", err)
	}
	if !strings.Contains(inPod, addr+"/24") {
		t.Errorf("net1 in the pod: %q, want %s/24", inPod, addr)
	}
	if link, _ := c.Exec(ctx, "default", podName, "main", "cat", "/sys/class/net/net1/mtu"); strings.TrimSpace(link) != "1400" {
		t.Errorf("net1 MTU in the pod = %q, want 1400", link)
	}
	if err := exec.Command("ip", "link", "show", netdev).Run(); err == nil {
		t.Errorf("%s is still in the host namespace after ADD", netdev)
	}
	// Multus reads the device-info file into the pod's network-status.
	if info, err := os.ReadFile(multus.rt.CapabilityArgs["CNIDeviceInfoFile"].(string)); err != nil || !strings.Contains(string(info), pf) {
		t.Errorf("device-info file for Multus: %s (%v)", info, err)
	}
	if err := multus.check(ctx); err != nil {
		t.Errorf("CHECK: %v", err)
	}

	// DEL returns it under its own name; a second DEL succeeds.
	for i := 1; i <= 2; i++ {
		if err := multus.del(ctx); err != nil {
			t.Fatalf("DEL %d: %v", i, err)
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show", netdev).CombinedOutput(); err != nil {
		t.Errorf("%s is not back on the host after DEL: %v %s", netdev, err, out)
	}
	if inPod, _ := c.Exec(ctx, "default", podName, "main", "ip", "-o", "link"); strings.Contains(inPod, "net1") {
		t.Errorf("net1 still in the pod after DEL: %s", inPod)
	}
}

// multusCall is one delegate network of one pod, called as Multus calls
// it: the real libcni with Multus's injected config and runtime arguments.
type multusCall struct {
	cni  *libcni.CNIConfig
	conf *libcni.NetworkConfig
	rt   *libcni.RuntimeConf
}

// newMultus plays Multus for pod's network (an item of its networks
// annotation, "[namespace/]name" of a NetworkAttachmentDefinition whose
// config is nad) allocated device pci.
func newMultus(t *testing.T, c *framework.Cluster, dir, network string, nad []byte, pci string, pod multustest.Pod) *multusCall {
	// libcni runs railyard-cni with this process's environment: its test
	// root lets the run directory's state and sysfs through.
	t.Setenv(config.TestRootEnv, os.TempDir())
	t.Helper()
	sels, err := multustest.ParseNetworks(network, pod.Namespace)
	if err != nil || len(sels) != 1 {
		t.Fatalf("network %q: %v, %v", network, sels, err)
	}
	name, err := multustest.DelegateName(nad, &sels[0])
	if err != nil {
		t.Fatal(err)
	}
	bin, err := c.ProjectBin("railyard-cni")
	if err != nil {
		t.Fatal(err)
	}
	delegate, err := multustest.Delegate(nad, pci)
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 Multus calls plugins through it (pkg/multus/multus.go, confAdd/confDel).
	conf, err := libcni.ConfFromBytes(delegate)
	if err != nil {
		t.Fatal(err)
	}
	// railyard-cni writes device-info files only where Multus names them.
	const devInfoDir = "/var/run/k8s.cni.cncf.io/devinfo/cni"
	t.Cleanup(func() { os.Remove(multustest.DeviceInfoPath(devInfoDir, name, pod.SandboxID, "net1")) })
	return &multusCall{
		cni:  libcni.NewCNIConfigWithCacheDir([]string{filepath.Dir(bin), c.CNIBinDir()}, filepath.Join(dir, "cni-cache"), nil),
		conf: conf,
		rt:   multustest.RuntimeConf(name, "net1", pod, pci, devInfoDir),
	}
}

func (m *multusCall) add(ctx context.Context) (types.Result, error) {
	return m.cni.AddNetwork(ctx, m.conf, m.rt)
}
func (m *multusCall) check(ctx context.Context) error { return m.cni.CheckNetwork(ctx, m.conf, m.rt) }
func (m *multusCall) del(ctx context.Context) error   { return m.cni.DelNetwork(ctx, m.conf, m.rt) }

// podNetns returns /proc/<pid>/ns/net of a process in the pod's cgroup
// (kubelet's cgroupfs driver puts it under .../pod<uid>/...).
func podNetns(t *testing.T, uid string) string {
	t.Helper()
	want := "pod" + uid
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(b, []byte(want)) {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "comm"))
			if strings.TrimSpace(string(comm)) == "sleep" {
				return filepath.Join(filepath.Dir(p), "ns/net")
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process of pod %s found in /proc", uid)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
