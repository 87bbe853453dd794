package deviceplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// fakeHolders is a PodResources list a test sets.
type fakeHolders struct {
	mu   sync.Mutex
	pods []podlist.Pod
	err  error
}

func (f *fakeHolders) List(context.Context) ([]podlist.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods, f.err
}

// hold makes kubelet hold ids of resource for one container.
func (f *fakeHolders) hold(resource string, ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = []podlist.Pod{{Namespace: "ns", Name: "p", Containers: []podlist.Container{{Name: "c", Devices: []podlist.Devices{{Resource: resource, IDs: ids}}}}}}
}

// filesIn lists the device-info directory.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func allocate(t *testing.T, p *Plugin, ids ...string) {
	t.Helper()
	if _, err := p.allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}}); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDevInfoFilesRemovedWhenThePluginStops: helm uninstall stops the
// agent; the pool's device-info files go with it (those Allocate wrote,
// and one an earlier agent left for a device not given since), and no
// other pool's file (a pool whose name extends this one's, a sandbox
// pool's token) is touched. Before, every file ever written stayed.
func TestDevInfoFilesRemovedWhenThePluginStops(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	p := newPlugin(t, n, resource, "spread", nil)
	refresh(t, n, p, vfPool)
	others := []string{
		containerdev.DevInfoPath(n.devInfoDir, resource+"-b", "0000:05:00.1"),
		containerdev.DevInfoPath(n.devInfoDir, resource, "n0-t3"),
	}
	leftover := containerdev.DevInfoPath(n.devInfoDir, resource, "0000:84:00.3")
	for _, f := range append([]string{leftover}, others...) {
		writeFile(t, f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	reg.Wait(t)
	ids := []string{"0000:05:00.1", "0000:84:00.2"}
	if _, err := dial(t, p).Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := os.Stat(containerdev.DevInfoPath(n.devInfoDir, resource, id)); err != nil {
			t.Fatalf("after Allocate: %v", err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range others {
		want = append(want, filepath.Base(f))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, filesIn(t, n.devInfoDir)); diff != "" {
		t.Errorf("device-info files after the plugin stopped (-want +got):\n%s", diff)
	}
	if _, err := p.allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids[:1]}}}); err == nil {
		t.Error("Allocate after the files were removed wrote one again")
	}
}

// TestDevInfoFilesFollowPodResources: a device's file stays while
// PodResources lists the device, or while its latest Allocate is recent
// (kubelet records devices only after Allocate returns); it goes once
// neither holds; a listed device's missing file (removed by the last
// agent's shutdown) is written back; a failed list removes nothing.
func TestDevInfoFilesFollowPodResources(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	p := newPlugin(t, n, resource, "spread", nil)
	holders := &fakeHolders{}
	now := time.Unix(1000, 0)
	p.cfg.Holders, p.cfg.Now = holders, func() time.Time { return now }
	refresh(t, n, p, vfPool)
	a, b := "0000:05:00.1", "0000:84:00.2"
	fileA, fileB := filepath.Base(containerdev.DevInfoPath(n.devInfoDir, resource, a)), filepath.Base(containerdev.DevInfoPath(n.devInfoDir, resource, b))
	prune := func(when string, want ...string) {
		t.Helper()
		if err := p.pruneDevInfo(context.Background()); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if want == nil {
			want = []string{}
		}
		if diff := cmp.Diff(want, filesIn(t, n.devInfoDir)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", when, diff)
		}
	}

	allocate(t, p, a)
	allocate(t, p, b)
	holders.hold(resource, a) // b's container not recorded yet
	now = now.Add(time.Second)
	prune("both just allocated", fileA, fileB)

	now = now.Add(2 * devInfoGrace)
	prune("b's pod gone", fileA)

	if err := os.Remove(filepath.Join(n.devInfoDir, fileA)); err != nil {
		t.Fatal(err)
	}
	prune("a still held, its file removed", fileA)

	holders.mu.Lock()
	holders.err = errors.New("kubelet restarting")
	holders.mu.Unlock()
	holders.hold(resource)
	if err := p.pruneDevInfo(context.Background()); err == nil {
		t.Error("prune without PodResources: no error")
	}
	if diff := cmp.Diff([]string{fileA}, filesIn(t, n.devInfoDir)); diff != "" {
		t.Errorf("after a failed list (-want +got):\n%s", diff)
	}
	holders.mu.Lock()
	holders.err = nil
	holders.mu.Unlock()
	prune("a's pod gone too")

	// Allocated again after its file went: written again and kept.
	allocate(t, p, b)
	prune("b allocated again", fileB)
}

// TestAllocateListsPCIAddressesInRailOrder: PCIDEVICE_<POOL> lists the
// devices in the rail order of RAILYARD_RDMA_DEVICES_<POOL> and
// NCCL_IB_HCA whatever order kubelet asks for them in, so the i-th PCI
// address is the i-th RDMA device's (it kept kubelet's order before, and
// the two lists disagreed).
func TestAllocateListsPCIAddressesInRailOrder(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 2)
	p := newPlugin(t, n, resource, "spread", nil)
	refresh(t, n, p, vfPool)
	ids := []string{"0000:84:00.2", "0000:05:00.1"}
	resp, err := p.allocate(context.Background(), &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		t.Fatal(err)
	}
	snap := p.current()
	d0, d1 := snap.devs[ids[0]].dev, snap.devs[ids[1]].dev
	if containerdev.Compare(p.containerDevice(d1, nil), p.containerDevice(d0, nil)) >= 0 {
		t.Fatalf("test premise: %s is not before %s in rail order", ids[1], ids[0])
	}
	env := resp.ContainerResponses[0].Envs
	want := map[string]string{
		containerdev.EnvName(resource):     ids[1] + "," + ids[0],
		containerdev.RDMAEnvName(resource): d1.RDMA + "," + d0.RDMA,
		"NCCL_IB_HCA":                      "=" + d1.RDMA + "," + d0.RDMA,
	}
	got := map[string]string{}
	for k := range want {
		got[k] = env[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}

// FuzzDevInfoID: a file name of the device-info directory (anyone may
// put one there) never panics devInfoID; a name it accepts is exactly
// the file containerdev.DevInfoPath names for that ID, and the ID is a
// PCI address or a share of one.
func FuzzDevInfoID(f *testing.F) {
	f.Add(resource, "railyard.io-rdma_vf-0000:05:00.1-device.json")
	f.Add(resource, "railyard.io-rdma_vf-0000:05:00.0-s12-device.json")
	f.Add(resource, "railyard.io-rdma_vf-b-0000:05:00.1-device.json")
	f.Add(resource, "railyard.io-rdma_vf-n0-t3-device.json")
	f.Add(resource, ".railyard.io-rdma_vf-0000:05:00.1-device.json.tmp")
	f.Add("a/b", "a-b--device.json")
	f.Fuzz(func(t *testing.T, resource, name string) {
		id, ok := devInfoID(resource, name)
		if !ok {
			return
		}
		if got := filepath.Base(containerdev.DevInfoPath("/d", resource, id)); got != name {
			t.Errorf("devInfoID(%q, %q) = %q, whose file is %q", resource, name, id, got)
		}
		pci := id
		if pf, _, err := deviceid.ParseShare(id); err == nil {
			pci = pf
		}
		if _, err := pciaddr.Parse(pci); err != nil {
			t.Errorf("devInfoID(%q, %q) = %q: not a PCI address or share: %v", resource, name, id, err)
		}
	})
}

// TestDevInfoIDKeepsToItsPool: the names of another pool (whose name
// extends this one's, or another name altogether), of a sandbox pool's
// token and of a temporary file are not this pool's.
func TestDevInfoIDKeepsToItsPool(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"railyard.io-rdma_vf-0000:05:00.1-device.json":      "0000:05:00.1",
		"railyard.io-rdma_vf-0000:05:00.0-s12-device.json":  "0000:05:00.0-s12",
		"railyard.io-rdma_vf-b-0000:05:00.1-device.json":    "",
		"railyard.io-rdma_vf-n0-t3-device.json":             "",
		".railyard.io-rdma_vf-0000:05:00.1-device.json.tmp": "",
		"railyard.io-rdma_vf-0000:05:00.1-device.json.tmp":  "",
		"example.com-x-0000:05:00.1-device.json":            "",
		"0000:05:00.1-device.json":                          "",
	} {
		id, _ := devInfoID(resource, name)
		if id != want {
			t.Errorf("devInfoID(%q) = %q, want %q", name, id, want)
		}
	}
}
