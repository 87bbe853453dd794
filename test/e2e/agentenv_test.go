//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/machines"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// agentEnv is what railyard-agent runs on in the e2e suite: a generated fake
// sysfs tree of a built-in machine model and a dev root with fake RDMA char
// devices. What is fake: the sysfs tree (generated files, no kernel behind
// them) and the device nodes (real char device inodes with the uverbs major
// 231, but no driver: opening them fails). Everything else — kubelet, its
// device manager, scheduler, containerd, runc creating the nodes in the
// container — is real.
type agentEnv struct {
	Machine  string
	SysfsDir string
	DevRoot  string
	Config   string
	// PFs: PCI address of each PF in the PF pool, by netdev name.
	PFs map[string]string
	// VFs: PCI addresses of the VFs in the VF pool.
	VFs []string
	// Uverbs and RDMA name of every PCI function in the tree that has one.
	Uverbs map[string]string
	RDMA   map[string]string
}

const (
	resPF = "railyard.io/e2e_pf"
	resVF = "railyard.io/e2e_vf"
	// envPF and envVF are the SR-IOV device plugin style variables.
	envPF = "PCIDEVICE_RAILYARD_IO_E2E_PF"
	envVF = "PCIDEVICE_RAILYARD_IO_E2E_VF"
)

// pfPoolNames are the eight NDR compute NICs of the dgx-h100 model.
var pfPoolNames = []string{"ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"}

// vfPoolPFs: two VFs each of these PFs form the VF pool.
var vfPoolPFs = []string{"ibp24s0", "ibp64s0"}

// newAgentEnv writes the dgx-h100 tree with 2 VFs per PF, the fake device
// nodes and the agent configuration under dir.
func newAgentEnv(t *testing.T, dir string) *agentEnv {
	t.Helper()
	e := &agentEnv{
		Machine:  "dgx-h100",
		SysfsDir: filepath.Join(dir, "sysfs"),
		DevRoot:  filepath.Join(dir, "dev"),
		Config:   filepath.Join(dir, "agent.yaml"),
		PFs:      map[string]string{},
		Uverbs:   map[string]string{},
		RDMA:     map[string]string{},
	}
	if err := machines.WriteSysfs(e.Machine, e.SysfsDir, 2); err != nil {
		t.Fatal(err)
	}
	// Read the expected pools straight from the tree, independently of the
	// agent's own discovery code.
	for _, name := range pfPoolNames {
		e.PFs[name] = pciAddress(t, filepath.Join(e.SysfsDir, "class/net", name, "device"))
	}
	for _, name := range vfPoolPFs {
		for i := range 2 {
			e.VFs = append(e.VFs, pciAddress(t, filepath.Join(e.SysfsDir, "class/net", name, "device", "virtfn"+strconv.Itoa(i))))
		}
	}
	sort.Strings(e.VFs)
	fns, err := os.ReadDir(filepath.Join(e.SysfsDir, "bus/pci/devices"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range fns {
		d := filepath.Join(e.SysfsDir, "bus/pci/devices", fn.Name())
		if u, _ := os.ReadDir(filepath.Join(d, "infiniband_verbs")); len(u) == 1 {
			e.Uverbs[fn.Name()] = u[0].Name()
		}
		if r, _ := os.ReadDir(filepath.Join(d, "infiniband")); len(r) == 1 {
			e.RDMA[fn.Name()] = r[0].Name()
		}
	}
	if err := framework.WriteDevNodes(e.SysfsDir, e.DevRoot); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: railyard.io/v1alpha1
kind: AgentConfig
nodeName: railyard-e2e
resyncInterval: 10s
pools:
- name: %s
  deviceKind: pf
  policy: spread
  selectors:
    pfNames: [%s]
- name: %s
  deviceKind: vf
  policy: spread
  selectors:
    pfNames: [%s]
`, resPF, strings.Join(pfPoolNames, ", "), resVF, strings.Join(suffixAll(vfPoolPFs, "#0-1"), ", "))
	if err := os.WriteFile(e.Config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func suffixAll(in []string, suffix string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = s + suffix
	}
	return out
}

// pciAddress resolves a sysfs link to a PCI function's directory and
// returns its address (the directory's name).
func pciAddress(t *testing.T, link string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(p)
}

// startAgent starts bin/railyard-agent on the environment, as a helper the
// cluster stops at teardown.
func (e *agentEnv) startAgent(t *testing.T, c *framework.Cluster) {
	t.Helper()
	bin, err := c.ProjectBin("railyard-agent")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StartHelper("railyard-agent", bin,
		"--config", e.Config,
		"--sysfs", e.SysfsDir,
		"--dev-root", e.DevRoot,
		"--plugin-dir", framework.DevicePluginDir,
		"--pod-resources-socket", c.PodResourcesSocket(),
		"--devinfo-dir", filepath.Join(filepath.Dir(e.Config), "devinfo"),
		"--metrics-addr", "0",
		"--log-level", "debug",
	)
	if err != nil {
		t.Fatal(err)
	}
}

func (e *agentEnv) stopAgent(c *framework.Cluster) error {
	return c.StopHelper("railyard-agent", 10*time.Second)
}

// expectedNodes returns the sorted /dev/infiniband entries a container with
// the given devices must see: their uverbs and rdma_cm.
func (e *agentEnv) expectedNodes(t *testing.T, devices ...string) []string {
	t.Helper()
	out := []string{"rdma_cm"}
	for _, d := range devices {
		u, ok := e.Uverbs[d]
		if !ok {
			t.Fatalf("device %s has no uverbs in the tree", d)
		}
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}
