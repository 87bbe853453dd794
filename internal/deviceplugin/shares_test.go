package deviceplugin

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/deviceplugin/kubelettest"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

const sharedRes = "railyard.io/rdma_shared"

func sharedPool(limit int) v1alpha1.Pool {
	return v1alpha1.Pool{Name: sharedRes, DeviceKind: v1alpha1.KindShared, Policy: "spread", SharedLimit: &limit}
}

// pfsOf returns the PF of every share ID (parse failures fail the test).
func pfsOf(t *testing.T, ids []string) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		pf, _, err := deviceid.ParseShare(id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = pf
	}
	return out
}

func distinct(list []string) int {
	l := slices.Clone(list)
	slices.Sort(l)
	return len(slices.Compact(l))
}

// TestSharedPoolOverGRPC serves a shared pool (3 shares per NIC) of the
// generated roce-8gpu-4nic tree (4 RoCE PFs) through the real gRPC server:
// ListAndWatch advertises 12 shares, GetPreferredAllocation spreads shares
// over NICs, Allocate hands out the NIC's own verbs device, and a DOWN
// port makes all three shares of its NIC unhealthy.
func TestSharedPoolOverGRPC(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 0)
	reg := kubelettest.StartRegistrar(t, n.pluginDir)
	p := newPlugin(t, n, sharedRes, "spread", nil)
	p.cfg.Shared = true
	refresh(t, n, p, sharedPool(3))
	runPlugin(t, p)
	reg.Wait(t)
	c := dial(t, p)
	w := kubelettest.Watch(t, c)
	list := w.Next(t, "12 shares", 10*time.Second, func(l []*pluginapi.Device) bool { return len(l) == 12 })
	var all []string
	for _, d := range list {
		all = append(all, d.ID)
	}
	nics := pfsOf(t, all)
	if distinct(nics) != 4 {
		t.Fatalf("shares on %d NICs, want 4: %v", distinct(nics), all)
	}
	ctx := context.Background()
	prefer := func(avail, must []string, size int) []string {
		t.Helper()
		resp, err := c.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs: avail, MustIncludeDeviceIDs: must, AllocationSize: int32(size)}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.ContainerResponses[0].DeviceIDs
	}
	// Up to the number of NICs: never two shares of one NIC.
	for size := 1; size <= 4; size++ {
		got := prefer(all, nil, size)
		if len(got) != size || distinct(pfsOf(t, got)) != size {
			t.Errorf("size %d: %v, want %d shares on %d NICs", size, got, size, size)
		}
	}
	// More than the NICs: every NIC once before any twice.
	got := prefer(all, nil, 6)
	per := map[string]int{}
	for _, pf := range pfsOf(t, got) {
		per[pf]++
	}
	if len(got) != 6 || len(per) != 4 {
		t.Errorf("size 6: %v (per NIC %v), want all 4 NICs", got, per)
	}
	for pf, k := range per {
		if k > 2 {
			t.Errorf("size 6: %d shares of %s", k, pf)
		}
	}
	// Must-include shares are kept even on one NIC; the rest avoids it.
	first := nics[0]
	must := []string{deviceid.Share(first, 0), deviceid.Share(first, 1)}
	got = prefer(all, must, 3)
	if !slices.Equal(got[:2], must) || pfsOf(t, got[2:])[0] == first {
		t.Errorf("must-include %v: %v", must, got)
	}
	// Across pods: with one share of a NIC taken, the next pod goes to a
	// NIC with more free shares.
	rest := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == deviceid.Share(first, 0) })
	if pf := pfsOf(t, prefer(rest, nil, 1))[0]; pf == first {
		t.Errorf("second pod got a share of %s again, which has fewer free shares", first)
	}

	// Allocate two shares of one NIC and one of another.
	var second string
	for _, pf := range nics {
		if pf != first {
			second = pf
			break
		}
	}
	ids := []string{deviceid.Share(first, 0), deviceid.Share(first, 2), deviceid.Share(second, 1)}
	aresp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		t.Fatal(err)
	}
	car := aresp.ContainerResponses[0]
	topo, err := discovery.Discover(ctx, n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	nicOf := map[string][2]string{} // PF -> RDMA, uverbs
	for _, nic := range topo.NICs {
		nicOf[nic.PCI] = [2]string{nic.RDMA, nic.Uverbs}
	}
	var paths []string
	for _, d := range car.Devices {
		paths = append(paths, d.ContainerPath)
	}
	slices.Sort(paths)
	wantPaths := []string{"/dev/infiniband/rdma_cm", "/dev/infiniband/" + nicOf[first][1], "/dev/infiniband/" + nicOf[second][1]}
	slices.Sort(wantPaths)
	if !slices.Equal(paths, wantPaths) {
		t.Errorf("device nodes %v, want %v", paths, wantPaths)
	}
	env := containerdev.EnvName(sharedRes)
	if car.Envs[env] != first+","+second {
		t.Errorf("%s = %q, want the two NICs %s,%s", env, car.Envs[env], first, second)
	}
	wantHCA := "=" + nicOf[first][0] + "," + nicOf[second][0]
	if car.Envs["NCCL_IB_HCA"] != wantHCA || car.Envs[containerdev.RDMAEnvName(sharedRes)] != wantHCA[1:] {
		t.Errorf("NCCL_IB_HCA=%q %s=%q, want %q", car.Envs["NCCL_IB_HCA"], containerdev.RDMAEnvName(sharedRes), car.Envs[containerdev.RDMAEnvName(sharedRes)], wantHCA)
	}
	var info map[string]struct {
		RDMA map[string]string `json:"rdma"`
	}
	if err := json.Unmarshal([]byte(car.Envs[env+"_INFO"]), &info); err != nil || len(info) != 2 || info[first].RDMA["rdma_dev"] != nicOf[first][0] {
		t.Errorf("%s_INFO = %s (%v)", env, car.Envs[env+"_INFO"], err)
	}
	b, err := os.ReadFile(containerdev.DevInfoPath(n.devInfoDir, sharedRes, ids[1]))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"pci-address":"` + first + `"`; !strings.Contains(string(b), want) || strings.Contains(string(b), "pf-pci-address") {
		t.Errorf("device info of share %s = %s, want %s", ids[1], b, want)
	}

	// The first NIC's port DOWN: its 3 shares unhealthy, the others not.
	if err := fakesysfs.SetPortState(n.sysfs, nicOf[first][0], 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	refresh(t, n, p, sharedPool(3))
	l := w.Next(t, "shares of the first NIC unhealthy", 10*time.Second, func(l []*pluginapi.Device) bool {
		return health(l)[deviceid.Share(first, 0)] == pluginapi.Unhealthy
	})
	for id, h := range health(l) {
		if want := strings.HasPrefix(id, first+"-s"); (h == pluginapi.Unhealthy) != want {
			t.Errorf("%s is %s after %s went down", id, h, nicOf[first][0])
		}
	}
}

// TestPreferSharesFollowsPolicy checks the NIC order of gpu-aware (the
// NIC nearest the pod's GPU) and packed (the NIC with fewest free shares)
// on the generated roce-8gpu-4nic tree.
func TestPreferSharesFollowsPolicy(t *testing.T) {
	n := newNode(t, "roce-8gpu-4nic", 0)
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, nic := range topo.NICs {
		for k := range 4 {
			all = append(all, deviceid.Share(nic.PCI, k))
		}
	}
	gpuAware, _ := alloc.ByName("gpu-aware")
	for _, r := range topo.Rails {
		got, pfs := preferShares(shareRequest{policy: gpuAware, topo: topo, gpus: []string{r.GPU}, available: all, size: 1})
		if len(got) != 1 || pfs[0] != r.NIC {
			t.Errorf("GPU %s: %v, want a share of its rail NIC %s", r.GPU, got, r.NIC)
		}
	}
	// Without GPUs gpu-aware spreads; two shares go to two NICs.
	if _, pfs := preferShares(shareRequest{policy: gpuAware, topo: topo, available: all, size: 2}); distinct(pfs) != 2 {
		t.Errorf("gpu-aware without GPUs: %v", pfs)
	}
	packed, _ := alloc.ByName("packed")
	last := topo.NICs[len(topo.NICs)-1].PCI
	partly := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return strings.HasPrefix(id, last) && !strings.HasSuffix(id, "-s3") })
	got, pfs := preferShares(shareRequest{policy: packed, topo: topo, available: partly, size: 2})
	if pfs[0] != last || distinct(pfs) != 2 || got[0] != deviceid.Share(last, 3) {
		t.Errorf("packed: %v, want the nearly full NIC %s first, then another NIC", got, last)
	}
	spread, _ := alloc.ByName("spread")
	if _, pfs := preferShares(shareRequest{policy: spread, topo: topo, available: partly, size: 3}); slices.Contains(pfs, last) {
		t.Errorf("spread: %v took the NIC with one free share while three NICs have four", pfs)
	}
}

// BenchmarkPreferShares8x1000 chooses 8 shares among the default 1000
// shares of each of the 8 compute NICs of the generated dgx-h100 tree (the
// policy part of GetPreferredAllocation, without gRPC).
func BenchmarkPreferShares8x1000(b *testing.B) {
	n := newNode(b, "dgx-h100", 0)
	topo, err := discovery.Discover(context.Background(), n.sysfs)
	if err != nil {
		b.Fatal(err)
	}
	var all []string
	for _, nic := range topo.NICs[:8] {
		for k := range v1alpha1.DefaultSharedLimit {
			all = append(all, deviceid.Share(nic.PCI, k))
		}
	}
	spread, _ := alloc.ByName("spread")
	b.ResetTimer()
	for b.Loop() {
		if got, _ := preferShares(shareRequest{policy: spread, topo: topo, available: all, size: 8}); len(got) != 8 {
			b.Fatalf("%d shares", len(got))
		}
	}
}
