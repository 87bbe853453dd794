package dra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// DGX-1's host bridge pci0000:00 has two root ports (00:02.0 and 00:03.0),
// each with a PLX switch holding two GPUs and one NIC. "Same pcieRoot" is
// then PIX for one NIC and PHB (through the host bridge) for the other:
// the scheduler, knowing only the root, gives the second GPU the NIC under
// the other switch. Railyard's own attributes tell the two apart.
func TestRealAllocatorDGX1SamePCIeRootIsOnlyPHB(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "dgx-1", v1alpha1.KindPF, 0)
	const (
		gpu0, gpu1, gpu2 = "0000:06:00.0", "0000:07:00.0", "0000:0a:00.0" // gpu1 under gpu0's switch, gpu2 under the other
		nicA, nicB       = "0000:05:00.0", "0000:0c:00.0"                 // nicA under gpu0's switch, nicB under gpu2's
	)
	res, _ := allocate(ctx, t, c.slices, sets.New[structured.DeviceID](), nodeName, strictPairs(2), filterTimeout)
	if res == nil {
		t.Fatal("2 pairs on one root: not allocated")
	}
	var got [][2]string
	var classes []topology.Class
	for _, p := range c.pairs(t, res, 2) {
		got = append(got, [2]string{p.gpu.pci, p.nic.pci})
		classes = append(classes, c.topo.Class(p.gpu.pci, p.nic.pci))
		if p.gpu.root != "pci0000:00" || p.nic.root != "pci0000:00" {
			t.Errorf("pair %s/%s not on pci0000:00", p.gpu.pci, p.nic.pci)
		}
	}
	if want := [][2]string{{gpu0, nicA}, {gpu1, nicB}}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("pairs %v, want %v", got, want)
	}
	if classes[0] != topology.PIX || classes[1] != topology.PHB {
		t.Errorf("classes %v, want [PIX PHB]: same pcieRoot, across the host bridge", classes)
	}

	// What Railyard publishes says so: the two NICs share pcieRoot but not
	// pcieSwitch or pcieRootPort, and each carries its class to each GPU.
	devs := map[string]resourceapi.Device{}
	for _, s := range c.slices {
		if s.Spec.Driver == dra.DriverName {
			for _, d := range s.Spec.Devices {
				devs[d.Name] = d
			}
		}
	}
	a, b := devs[mustName(t, nicA)], devs[mustName(t, nicB)]
	for _, chk := range []struct {
		dev  resourceapi.Device
		attr resourceapi.QualifiedName
		want string
	}{
		{a, dra.AttrPCIeRoot, "pci0000:00"}, {b, dra.AttrPCIeRoot, "pci0000:00"},
		{a, dra.AttrPCIeRootPort, "0000:00:02.0"}, {b, dra.AttrPCIeRootPort, "0000:00:03.0"},
		{a, dra.AttrPCIeSwitch, "0000:03:00.0"}, {b, dra.AttrPCIeSwitch, "0000:08:00.0"},
		{a, gpuAttr(t, gpu1), "PIX"}, {b, gpuAttr(t, gpu1), "PHB"}, {b, gpuAttr(t, gpu2), "PIX"},
	} {
		if v := chk.dev.Attributes[chk.attr].StringValue; v == nil || *v != chk.want {
			t.Errorf("%s %s = %v, want %s", chk.dev.Name, chk.attr, v, chk.want)
		}
	}

	// A claim that names its GPU can ask for the NIC by class with CEL
	// (Railyard's per-GPU attribute); pcieRoot alone gives the root's
	// first NIC, across the host bridge.
	pinned := func(nicSelector ...string) *resourceapi.ResourceClaim {
		return claim("pinned", []resourceapi.DeviceRequest{
			exactly("gpu", gpustandin.DeviceClassName, `device.attributes["resource.kubernetes.io"].pciBusID == "`+gpu2+`"`),
			exactly("nic", dra.DeviceClassName, nicSelector...),
		}, []resourceapi.DeviceConstraint{match(dra.AttrPCIeRoot, "gpu", "nic")})
	}
	for name, tc := range map[string]struct {
		claim *resourceapi.ResourceClaim
		nic   string
	}{
		"pcieRoot only": {pinned(), nicA},
		"railyard.io class": {pinned(`"gpu_0000_0a_00_0" in device.attributes["railyard.io"] && ` +
			`device.attributes["railyard.io"].gpu_0000_0a_00_0 in ["PIX", "PXB"]`), nicB},
	} {
		res, _ := allocate(ctx, t, c.slices, sets.New[structured.DeviceID](), nodeName, tc.claim, filterTimeout)
		if res == nil {
			t.Fatalf("%s: not allocated", name)
		}
		for _, r := range res.Devices.Results {
			if r.Request == "nic" && r.Device != mustName(t, tc.nic) {
				t.Errorf("%s: NIC %s, want %s (%s)", name, r.Device, mustName(t, tc.nic), c.topo.Class(gpu2, tc.nic))
			}
		}
	}
}

// Devices already allocated to other claims are not handed out again: a
// second 4-pair claim on DGX H100 gets the other four GPUs and their own
// NICs, and a third finds nothing.
func TestRealAllocatorRespectsAllocatedDevices(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "dgx-h100", v1alpha1.KindPF, 0)
	inUse := sets.New[structured.DeviceID]()
	seen := map[string]bool{}
	for round := range 2 {
		res, _ := allocate(ctx, t, c.slices, inUse, nodeName, alignedPairs(4), filterTimeout)
		if res == nil {
			t.Fatalf("round %d: not allocated", round)
		}
		for _, p := range c.pairs(t, res, 4) {
			if seen[p.gpu.pci] || seen[p.nic.pci] || c.topo.Class(p.gpu.pci, p.nic.pci) != topology.PIX {
				t.Errorf("round %d: pair %s/%s reused or not PIX (%s)", round, p.gpu.pci, p.nic.pci, c.topo.Class(p.gpu.pci, p.nic.pci))
			}
			seen[p.gpu.pci], seen[p.nic.pci] = true, true
		}
		for _, r := range res.Devices.Results {
			inUse.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
		}
	}
	if res, _ := allocate(ctx, t, c.slices, inUse, nodeName, alignedPairs(1), countTimeout); res != nil {
		t.Errorf("a ninth GPU was allocated: %+v", res.Devices.Results)
	}
}

// A NIC-only claim can ask for a NIC with GPUDirect RDMA to some GPU
// (bestGPUClass PIX or PXB) of a given link layer and speed: on DGX H100
// that leaves out the storage and E810 ports.
func TestRealAllocatorNICOnlyClaim(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "dgx-h100", v1alpha1.KindPF, 0)
	sel := []string{
		`"bestGPUClass" in device.attributes["railyard.io"] && device.attributes["railyard.io"].bestGPUClass in ["PIX", "PXB"]`,
		`"linkLayer" in device.attributes["railyard.io"] && device.attributes["railyard.io"].linkLayer == "InfiniBand"`,
		`"speedGbps" in device.attributes["railyard.io"] && device.attributes["railyard.io"].speedGbps >= 400`,
	}
	var reqs []resourceapi.DeviceRequest
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		reqs = append(reqs, exactly(n, dra.DeviceClassName, sel...))
	}
	res, _ := allocate(ctx, t, c.slices, sets.New[structured.DeviceID](), nodeName, claim("nics", reqs, nil), filterTimeout)
	if res == nil {
		t.Fatal("8 GPUDirect NICs: not allocated")
	}
	for _, r := range res.Devices.Results {
		pci, err := dra.PCIAddress(r.Device)
		if err != nil {
			t.Fatal(err)
		}
		if rail, ok := c.topo.Rail(railGPU(c.topo, pci)); !ok || rail.NIC != pci {
			t.Errorf("%s is no GPU's rail", pci)
		}
	}
	reqs = append(reqs, exactly("i", dra.DeviceClassName, sel...))
	if res, _ := allocate(ctx, t, c.slices, sets.New[structured.DeviceID](), nodeName, claim("nics", reqs, nil), countTimeout); res != nil {
		t.Error("a ninth GPUDirect NIC was allocated")
	}
}

// railGPU returns the GPU whose rail is the NIC at pci, "" for none.
func railGPU(t *topology.Topology, pci string) string {
	for _, r := range t.Rails {
		if r.NIC == pci {
			return r.GPU
		}
	}
	return ""
}

func mustName(t *testing.T, pci string) string {
	t.Helper()
	n, err := dra.DeviceName(pci)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func gpuAttr(t *testing.T, pci string) resourceapi.QualifiedName {
	t.Helper()
	n, err := dra.GPUClassAttribute(pci)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A claim can keep its NIC under one leaf switch: with each rail's PF
// cabled to leaf-r<rail> (Options.Leaves, as the agent reads its Node's
// fabric ports), the real allocator gives a claim selecting
// railyard.io/leaf == "leaf-r3" a VF of rail 3's PF and nothing else, and
// a claim for a leaf no NIC reaches is unsatisfiable.
func TestRealAllocatorSelectsANICByItsLeaf(t *testing.T) {
	ctx := context.Background()
	topo, err := machines.Topology(ctx, "dgx-h100", 2)
	if err != nil {
		t.Fatal(err)
	}
	rails := topo.NICRails()
	leaves := map[string]string{}
	for _, n := range topo.NICs {
		if r, ok := rails[n.PCI]; ok {
			leaves[n.RDMA] = fmt.Sprintf("leaf-r%d", r)
		}
	}
	pools, err := dra.Build(nodeName, topo, []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: v1alpha1.KindVF}}, dra.Options{Leaves: leaves})
	if err != nil {
		t.Fatal(err)
	}
	slices := dra.ResourceSlices(nodeName, pools, 1)
	// The guard: the storage NICs have no leaf, and CEL fails on a missing
	// key (the allocator then fails the claim on the node).
	leaf3 := exactly("nic", dra.DeviceClassName, `"leaf" in device.attributes["railyard.io"] && device.attributes["railyard.io"].leaf == "leaf-r3"`)
	leaf3.Exactly.Count = 2
	res, _ := allocate(ctx, t, slices, sets.New[structured.DeviceID](), nodeName, claim("leaf3", []resourceapi.DeviceRequest{leaf3}, nil), filterTimeout)
	if res == nil || len(res.Devices.Results) != 2 {
		t.Fatalf("two VFs under leaf-r3: %+v", res)
	}
	for _, r := range res.Devices.Results {
		pci, err := dra.PCIAddress(r.Device)
		if err != nil {
			t.Fatal(err)
		}
		_, nic, ok := topo.VF(pci)
		if !ok || rails[nic.PCI] != 3 {
			t.Errorf("%s (PF %s, rail %d) is not under leaf-r3", pci, nic.PCI, rails[nic.PCI])
		}
	}
	leaf3.Exactly.Count = 3 // rail 3's PF has 2 VFs
	if res, _ := allocate(ctx, t, slices, sets.New[structured.DeviceID](), nodeName, claim("leaf3", []resourceapi.DeviceRequest{leaf3}, nil), countTimeout); res != nil {
		t.Error("three VFs under leaf-r3, which has two")
	}
	none := exactly("nic", dra.DeviceClassName, `"leaf" in device.attributes["railyard.io"] && device.attributes["railyard.io"].leaf == "leaf-r99"`)
	if res, _ := allocate(ctx, t, slices, sets.New[structured.DeviceID](), nodeName, claim("none", []resourceapi.DeviceRequest{none}, nil), countTimeout); res != nil {
		t.Error("a NIC under a leaf none reaches")
	}
}

// A pool's DeviceClass serves its extended resource (KEP-5004): the
// scheduler's claim for a pod asking "railyard.io/rdma_vf: 2" names the
// class and nothing else (no selector, no constraint), and the real
// allocator gives it two devices of that pool only, never the PF pool's.
func TestPoolDeviceClassServesItsExtendedResource(t *testing.T) {
	ctx := context.Background()
	topo, err := machines.Topology(ctx, "dgx-h100", 2)
	if err != nil {
		t.Fatal(err)
	}
	pools, err := dra.Build(nodeName, topo, []v1alpha1.Pool{
		{Name: "railyard.io/rdma_vf", DeviceKind: v1alpha1.KindVF},
		{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF},
	}, dra.Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices := dra.ResourceSlices(nodeName, pools, 1)
	for _, tc := range []struct {
		pool string
		vf   bool
	}{{"railyard.io/rdma_vf", true}, {"railyard.io/rdma_pf", false}} {
		dc := dra.PoolDeviceClass(tc.pool)
		if dc.Spec.ExtendedResourceName == nil || *dc.Spec.ExtendedResourceName != tc.pool {
			t.Fatalf("class %s serves %v, want %s", dc.Name, dc.Spec.ExtendedResourceName, tc.pool)
		}
		req := exactly("container-0-request-0", dc.Name)
		req.Exactly.Count = 2
		res, _ := allocate(ctx, t, slices, sets.New[structured.DeviceID](), nodeName, claim("ext-"+dc.Name, []resourceapi.DeviceRequest{req}, nil), filterTimeout)
		if res == nil || len(res.Devices.Results) != 2 {
			t.Fatalf("%s: %+v", dc.Name, res)
		}
		for _, r := range res.Devices.Results {
			pci, err := dra.PCIAddress(r.Device)
			if err != nil {
				t.Fatal(err)
			}
			_, _, isVF := topo.VF(pci)
			if isVF != tc.vf || !strings.HasSuffix(r.Pool, "/"+strings.ReplaceAll(strings.TrimPrefix(tc.pool, "railyard.io/"), "_", "-")) {
				t.Errorf("%s gave %s of pool %s (VF %v)", dc.Name, pci, r.Pool, isVF)
			}
		}
	}
}
