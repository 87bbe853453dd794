package deviceplugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

const (
	railA = "intel.com/sriov_111"
	railB = "intel.com/sriov_112"
)

// multiRail is two PF pools of the generated roce-8gpu-4nic tree (NICs 0
// and 1 in pool A, 2 and 3 in pool B), served by real gRPC servers that
// share one RailGroups over the PodResources stand-in.
type multiRail struct {
	n        *node
	standIn  *podrestest.Server
	groups   *RailGroups
	clients  map[string]pluginapi.DevicePluginClient
	nics     []string          // PF addresses in PCI order
	rdma     map[string]string // PF -> RDMA device
	rail     map[string]int    // PF -> rail index
	stateDir string
	cdiDir   string
}

func newMultiRail(t *testing.T) *multiRail {
	t.Helper()
	n := newNode(t, "roce-8gpu-4nic", 0)
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	m := &multiRail{n: n, clients: map[string]pluginapi.DevicePluginClient{}, rdma: map[string]string{}, rail: map[string]int{},
		stateDir: t.TempDir(), cdiDir: filepath.Join(t.TempDir(), "cdi")}
	for _, nic := range topo.NICs {
		m.nics = append(m.nics, nic.PCI)
		m.rdma[nic.PCI] = nic.RDMA
	}
	if len(m.nics) != 4 {
		t.Fatalf("%d NICs, want 4", len(m.nics))
	}
	standIn, client := startPodResourcesStandIn(t)
	m.standIn = standIn
	m.groups, err = NewRailGroups(client, m.stateDir, m.cdiDir)
	if err != nil {
		t.Fatal(err)
	}
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	for res, nics := range map[string][]string{railA: m.nics[:2], railB: m.nics[2:]} {
		p := newPlugin(t, n, res, "spread", nil)
		p.cfg.Groups = m.groups
		pc := v1alpha1.Pool{Name: res, DeviceKind: v1alpha1.KindPF, Selectors: v1alpha1.Selectors{PCIAddresses: nics}}
		refresh(t, n, p, pc)
		for _, d := range p.current().devs {
			m.rail[d.dev.ID] = d.dev.Rail
		}
		runPlugin(t, p)
		m.clients[res] = dial(t, p)
	}
	reg.WaitAll(t, railA, railB)
	return m
}

// step is one Allocate of a container's admission.
type step struct {
	container, resource string
	ids                 []string
}

// admit does what kubelet does when it admits a pod: add it to the pod
// manager (PodResources lists it), then for each container and resource,
// in the given order, call Allocate and record the devices right after it
// returns. It returns each container's responses by resource.
func (m *multiRail) admit(t *testing.T, pod string, containers []string, steps ...step) map[string]map[string]*pluginapi.ContainerAllocateResponse {
	t.Helper()
	m.standIn.AddPod(pod, containers...)
	out := map[string]map[string]*pluginapi.ContainerAllocateResponse{}
	for _, s := range steps {
		resp, err := m.clients[s.resource].Allocate(context.Background(), &pluginapi.AllocateRequest{
			ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: s.ids}}})
		if err != nil {
			t.Fatalf("Allocate %s %v: %v", s.resource, s.ids, err)
		}
		m.standIn.Insert(pod, s.container, s.resource, s.ids)
		if out[s.container] == nil {
			out[s.container] = map[string]*pluginapi.ContainerAllocateResponse{}
		}
		out[s.container][s.resource] = resp.ContainerResponses[0]
	}
	return out
}

// kubeletMerge merges a container's responses the way kubelet's
// deviceRunContainerOptions does (pkg/kubelet/cm/devicemanager/pod_devices.go,
// v1.35): resources in the given order, the first value of an env var or
// of a mount's host path wins, a different later value is a conflict
// (kubelet logs it), CDI names are deduplicated.
func kubeletMerge(resps map[string]*pluginapi.ContainerAllocateResponse, order []string) (env, mounts map[string]string, cdi []string, conflicts []string) {
	env, mounts = map[string]string{}, map[string]string{}
	for _, r := range order {
		resp := resps[r]
		for k, v := range resp.Envs {
			if e, ok := env[k]; ok {
				if e != v {
					conflicts = append(conflicts, "env "+k)
				}
				continue
			}
			env[k] = v
		}
		for _, mt := range resp.Mounts {
			if h, ok := mounts[mt.ContainerPath]; ok {
				if h != mt.HostPath {
					conflicts = append(conflicts, "mount "+mt.ContainerPath)
				}
				continue
			}
			mounts[mt.ContainerPath] = mt.HostPath
		}
		for _, c := range resp.CdiDevices {
			if !slices.Contains(cdi, c.Name) {
				cdi = append(cdi, c.Name)
			}
		}
	}
	return env, mounts, cdi, conflicts
}

// ncclLine returns the NCCL_IB_HCA line of a merged configuration file.
func ncclLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "NCCL_IB_HCA=") {
			return l
		}
	}
	t.Fatalf("%s has no NCCL_IB_HCA line:\n%s", path, b)
	return ""
}

// cdiEnv returns the env edits of the CDI device name in the CDI dir.
func (m *multiRail) cdiEnv(t *testing.T, name string) []string {
	t.Helper()
	group := strings.TrimPrefix(name, NCCLCDIKind+"=")
	b, err := os.ReadFile(filepath.Join(m.cdiDir, "railyard.io-nccl-"+group+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Kind != NCCLCDIKind || spec.Version == "" || len(spec.Devices) != 1 || spec.Devices[0].Name != group {
		t.Fatalf("CDI spec %s", b)
	}
	return spec.Devices[0].ContainerEdits.Env
}

// wantHCA is "NCCL_IB_HCA==<rdma>,..." of the PFs in rail order.
func (m *multiRail) wantHCA(pfs ...string) string {
	pfs = slices.Clone(pfs)
	slices.SortFunc(pfs, func(a, b string) int {
		return railOrder(hcaDevice{ID: a, PF: a, Rail: m.rail[a]}, hcaDevice{ID: b, PF: b, Rail: m.rail[b]})
	})
	names := make([]string, len(pfs))
	for i, pf := range pfs {
		names[i] = m.rdma[pf]
	}
	return "NCCL_IB_HCA==" + strings.Join(names, ",")
}

// TestMultiRailMergedWhateverTheOrder: two pods each take one PF of pool A
// and one of pool B, kubelet allocating A first for one and B first for
// the other. Both responses of a container carry the same mount, the same
// NCCL_CONF_FILE and the same CDI device, so kubelet's merge has no
// conflict in either iteration order; the file and the CDI spec name both
// NICs in rail order; each pool's own variable names its NIC; no
// NCCL_IB_HCA is in Allocate's environment.
func TestMultiRailMergedWhateverTheOrder(t *testing.T) {
	m := newMultiRail(t)
	a0, a1, b0, b1 := m.nics[0], m.nics[1], m.nics[2], m.nics[3]
	cases := []struct {
		pod   string
		steps []step
		pfs   []string
	}{
		{"a-first", []step{{"main", railA, []string{a0}}, {"main", railB, []string{b0}}}, []string{a0, b0}},
		{"b-first", []step{{"main", railB, []string{b1}}, {"main", railA, []string{a1}}}, []string{b1, a1}},
	}
	for _, c := range cases {
		t.Run(c.pod, func(t *testing.T) {
			resps := m.admit(t, c.pod, []string{"main"}, c.steps...)["main"]
			var first map[string]string
			for _, order := range [][]string{{railA, railB}, {railB, railA}} {
				env, mounts, cdi, conflicts := kubeletMerge(resps, order)
				if len(conflicts) > 0 {
					t.Errorf("kubelet order %v: conflicts %v", order, conflicts)
				}
				if _, ok := env["NCCL_IB_HCA"]; ok {
					t.Errorf("NCCL_IB_HCA in Allocate's env: %q", env["NCCL_IB_HCA"])
				}
				if env["NCCL_CONF_FILE"] != NCCLConfPath || len(mounts) != 1 || mounts[NCCLConfPath] == "" || len(cdi) != 1 {
					t.Fatalf("env %v mounts %v cdi %v", env, mounts, cdi)
				}
				if got, want := ncclLine(t, mounts[NCCLConfPath]), m.wantHCA(c.pfs...); got != want {
					t.Errorf("nccl.conf says %q, want %q", got, want)
				}
				if got, want := m.cdiEnv(t, cdi[0]), []string{m.wantHCA(c.pfs...)}; !slices.Equal(got, want) {
					t.Errorf("CDI env %v, want %v", got, want)
				}
				if env[containerdev.RDMAEnvName(railA)] != m.rdma[c.pfs[slices.IndexFunc(c.steps, func(s step) bool { return s.resource == railA })]] ||
					env[containerdev.RDMAEnvName(railB)] != m.rdma[c.pfs[slices.IndexFunc(c.steps, func(s step) bool { return s.resource == railB })]] {
					t.Errorf("per-pool variables: %s=%q %s=%q", containerdev.RDMAEnvName(railA), env[containerdev.RDMAEnvName(railA)], containerdev.RDMAEnvName(railB), env[containerdev.RDMAEnvName(railB)])
				}
				flat := map[string]string{"mount": mounts[NCCLConfPath], "cdi": cdi[0]}
				for k, v := range env {
					flat[k] = v
				}
				if first == nil {
					first = flat
				} else if !mapsEqual(first, flat) {
					t.Errorf("kubelet orders give different containers:\n%v\n%v", first, flat)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// mount returns the host path of a response's NCCL configuration mount.
func mount(t *testing.T, r *pluginapi.ContainerAllocateResponse) string {
	t.Helper()
	if len(r.Mounts) != 1 || r.Mounts[0].ContainerPath != NCCLConfPath || !r.Mounts[0].ReadOnly {
		t.Fatalf("mounts %v", r.Mounts)
	}
	return r.Mounts[0].HostPath
}

// TestMultiRailNewPodIsNotMerged: pod x takes only pool A; the next pod y
// takes B then A. y's B Allocate sees x holding the last allocation, but y
// is a pod PodResources did not list then: kubelet moved on, so y starts
// its own group, and x's file keeps naming only x's NIC.
func TestMultiRailNewPodIsNotMerged(t *testing.T) {
	m := newMultiRail(t)
	x := m.admit(t, "x", []string{"main"}, step{"main", railA, []string{m.nics[0]}})["main"]
	y := m.admit(t, "y", []string{"main"}, step{"main", railB, []string{m.nics[2]}}, step{"main", railA, []string{m.nics[1]}})["main"]
	if got, want := ncclLine(t, mount(t, x[railA])), m.wantHCA(m.nics[0]); got != want {
		t.Errorf("x's nccl.conf %q, want %q", got, want)
	}
	if mount(t, y[railB]) == mount(t, x[railA]) {
		t.Fatal("y's first allocation joined x's group")
	}
	if mount(t, y[railA]) != mount(t, y[railB]) {
		t.Errorf("y's two allocations have different files: %s, %s", mount(t, y[railA]), mount(t, y[railB]))
	}
	if got, want := ncclLine(t, mount(t, y[railA])), m.wantHCA(m.nics[1], m.nics[2]); got != want {
		t.Errorf("y's nccl.conf %q, want %q", got, want)
	}
}

// TestMultiRailTwoContainersAreNotMerged: in a pod with two containers,
// c1 taking A and c2 taking B, the B allocation cannot be told apart from
// a second allocation of c1, so it is not merged: each keeps its own file.
func TestMultiRailTwoContainersAreNotMerged(t *testing.T) {
	m := newMultiRail(t)
	r := m.admit(t, "two", []string{"c1", "c2"}, step{"c1", railA, []string{m.nics[0]}}, step{"c2", railB, []string{m.nics[2]}})
	if mount(t, r["c1"][railA]) == mount(t, r["c2"][railB]) {
		t.Fatal("the containers share a group")
	}
	if got, want := ncclLine(t, mount(t, r["c1"][railA])), m.wantHCA(m.nics[0]); got != want {
		t.Errorf("c1's nccl.conf %q, want %q", got, want)
	}
}

// TestMultiRailSlowSecondAllocationIsNotMerged uses the groups' clock: a
// second allocation 31 s after the first starts its own group.
func TestMultiRailSlowSecondAllocationIsNotMerged(t *testing.T) {
	m := newMultiRail(t)
	now := time.Now()
	m.groups.now = func() time.Time { return now }
	first := m.admit(t, "slow", []string{"main"}, step{"main", railA, []string{m.nics[0]}})["main"]
	now = now.Add(31 * time.Second)
	m.standIn.Set() // allocate B for the same pod without adding it again
	m.standIn.AddPod("slow", "main")
	m.standIn.Insert("slow", "main", railA, []string{m.nics[0]})
	resp, err := m.clients[railB].Allocate(context.Background(), &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{m.nics[2]}}}})
	if err != nil {
		t.Fatal(err)
	}
	if mount(t, resp.ContainerResponses[0]) == mount(t, first[railA]) {
		t.Error("an allocation 31 s later joined the group")
	}
}

// TestRailGroupsRestoreCDISpecs: the CDI directory emptied (a reboot of a
// tmpfs /var/run/cdi), a new RailGroups over the same state directory
// writes every group's CDI spec again with the same content.
func TestRailGroupsRestoreCDISpecs(t *testing.T) {
	m := newMultiRail(t)
	m.admit(t, "p", []string{"main"}, step{"main", railA, []string{m.nics[1]}}, step{"main", railB, []string{m.nics[3]}})
	specs, err := filepath.Glob(filepath.Join(m.cdiDir, "*.json"))
	if err != nil || len(specs) != 1 {
		t.Fatalf("CDI specs %v %v, want 1", specs, err)
	}
	before, err := os.ReadFile(specs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(m.cdiDir); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRailGroups(m.groups.lister, m.stateDir, m.cdiDir); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(specs[0])
	if err != nil || string(after) != string(before) {
		t.Errorf("restored spec %s (%v), want %s", after, err, before)
	}
	if !strings.Contains(string(after), m.wantHCA(m.nics[1], m.nics[3])) {
		t.Errorf("spec %s lacks %s", after, m.wantHCA(m.nics[1], m.nics[3]))
	}
}

// TestGroupNameIsAFileAndCDIName: group names keep only characters valid
// in file names and CDI device names, and fit kubelet's and CDI's limits.
func TestGroupNameIsAFileAndCDIName(t *testing.T) {
	for _, c := range []struct{ res, id, want string }{
		{"intel.com/sriov_111", "0000:18:00.2", "intel.com_sriov_111_0000_18_00.2"},
		{"railyard.io/rdma_shared", "0000:18:00.0-s12", "railyard.io_rdma_shared_0000_18_00.0-s12"},
	} {
		if got := groupName(c.res, c.id); got != c.want {
			t.Errorf("groupName(%q, %q) = %q, want %q", c.res, c.id, got, c.want)
		}
	}
}
