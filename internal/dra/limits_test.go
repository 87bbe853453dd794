package dra_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// checkSlices applies the API server's rules for ResourceSlices that
// these slices can break (k8s.io/kubernetes/pkg/apis/resource/validation,
// restated with the API's constants): names, attribute names and values,
// attributes per device, devices per slice, pools.
func checkSlices(slices []*resourceapi.ResourceSlice) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	perPool := map[string]int{}
	names := map[string]bool{}
	for _, s := range slices {
		sp := s.Spec
		if e := validation.IsDNS1123Subdomain(sp.Driver); len(e) > 0 || len(sp.Driver) > resourceapi.DriverNameMaxLength {
			bad("driver %q: %v", sp.Driver, e)
		}
		for _, part := range strings.Split(sp.Pool.Name, "/") {
			if e := validation.IsDNS1123Subdomain(part); len(e) > 0 {
				bad("pool %q: %v", sp.Pool.Name, e)
			}
		}
		if len(sp.Pool.Name) > resourceapi.PoolNameMaxLength {
			bad("pool %q is too long", sp.Pool.Name)
		}
		perPool[sp.Driver+" "+sp.Pool.Name]++
		if n := len(sp.Devices); n > resourceapi.ResourceSliceMaxDevices {
			bad("slice %s: %d devices", s.Name, n)
		}
		for _, d := range sp.Devices {
			key := sp.Driver + " " + sp.Pool.Name + " " + d.Name
			if names[key] {
				bad("device %s twice in its pool", key)
			}
			names[key] = true
			if e := validation.IsDNS1123Label(d.Name); len(e) > 0 {
				bad("device %q: %v", d.Name, e)
			}
			if n := len(d.Attributes) + len(d.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
				bad("device %s: %d attributes and capacities", d.Name, n)
			}
			for name, v := range d.Attributes {
				domain, id, qualified := strings.Cut(string(name), "/")
				if !qualified {
					id = domain
				} else if e := validation.IsDNS1123Subdomain(domain); len(e) > 0 || len(domain) > resourceapi.DeviceMaxDomainLength {
					bad("device %s: attribute %s: domain: %v", d.Name, name, e)
				}
				if e := validation.IsCIdentifier(id); len(e) > 0 || len(id) > resourceapi.DeviceMaxIDLength {
					bad("device %s: attribute %s: id: %v", d.Name, name, e)
				}
				set := 0
				for _, p := range []*string{v.StringValue, v.VersionValue} {
					if p != nil {
						set++
						if len(*p) > resourceapi.DeviceAttributeMaxValueLength {
							bad("device %s: attribute %s: %d bytes", d.Name, name, len(*p))
						}
					}
				}
				if v.IntValue != nil {
					set++
				}
				if v.BoolValue != nil {
					set++
				}
				if set != 1 {
					bad("device %s: attribute %s has %d values", d.Name, name, set)
				}
				if name == dra.AttrNUMANode && (v.IntValue == nil || *v.IntValue < 0) {
					bad("device %s: numaNode %v", d.Name, v.IntValue)
				}
			}
		}
	}
	for _, s := range slices {
		if n := perPool[s.Spec.Driver+" "+s.Spec.Pool.Name]; int64(n) != s.Spec.Pool.ResourceSliceCount {
			bad("pool %s: %d slices, resourceSliceCount %d", s.Spec.Pool.Name, n, s.Spec.Pool.ResourceSliceCount)
		}
	}
	return errs
}

// Every slice Railyard and the GPU stand-in publish for every built-in
// machine passes the API's validation rules.
func TestSlicesRespectAPILimitsOnEveryMachine(t *testing.T) {
	for _, m := range machines.Names() {
		topo, err := machines.Topology(context.Background(), m, 4)
		if err != nil {
			t.Fatal(err)
		}
		pools, err := dra.Build("node-a", topo, []v1alpha1.Pool{
			{Name: "railyard.io/rdma_vf", DeviceKind: v1alpha1.KindVF},
			{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF},
		}, dra.Options{})
		if err != nil {
			t.Fatal(err)
		}
		slices := append(dra.ResourceSlices("node-a", pools, 1), gpustandin.ResourceSlices("node-a", topo)...)
		for _, e := range checkSlices(slices) {
			t.Errorf("%s: %s", m, e)
		}
		for _, p := range pools {
			if len(p.Warnings) > 0 {
				t.Errorf("%s: warnings %v", m, p.Warnings)
			}
		}
	}
}

// 2048 VFs (16 PFs x 128, the scale benchmarks' node) become one pool of
// 16 slices of 128 devices, each device once, in address order; the
// controller's view (DriverResources) has the same split.
func TestSplit2048VFsIntoSlices(t *testing.T) {
	topo := bigNode(t)
	pools, err := dra.Build("big", topo, []v1alpha1.Pool{{Name: "railyard.io/rdma_vf"}}, dra.Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices := dra.ResourceSlices("big", pools, 3)
	if len(pools[0].Devices) != 2048 || len(slices) != 16 {
		t.Fatalf("%d devices in %d slices, want 2048 in 16", len(pools[0].Devices), len(slices))
	}
	for _, e := range checkSlices(slices) {
		t.Error(e)
	}
	prev := ""
	for _, s := range slices {
		if len(s.Spec.Devices) != 128 || s.Spec.Pool.Generation != 3 || s.Spec.Pool.ResourceSliceCount != 16 || s.Spec.Pool.Name != "big/rdma-vf" {
			t.Errorf("slice %s: %d devices, pool %+v", s.Name, len(s.Spec.Devices), s.Spec.Pool)
		}
		for _, d := range s.Spec.Devices {
			pci, _ := dra.PCIAddress(d.Name)
			if prev != "" && !(prev < pci) {
				t.Errorf("%s after %s", pci, prev)
			}
			prev = pci
		}
	}
	dr := dra.DriverResources(pools)
	if p, ok := dr.Pools["big/rdma-vf"]; !ok || len(p.Slices) != 16 || len(p.Slices[15].Devices) != 128 {
		t.Errorf("DriverResources: %+v", dr.Pools)
	}
	empty := dra.DriverResources([]dra.Pool{{Name: "big/none"}})
	if p := empty.Pools["big/none"]; len(p.Slices) != 1 || len(p.Slices[0].Devices) != 0 {
		t.Errorf("an empty pool publishes %+v, want one empty slice", p)
	}
}

// bigNode discovers the 2048-VF node (fakesysfs.DualRailNode, 128 VFs on
// each of its 16 PFs).
func bigNode(tb testing.TB) *topology.Topology {
	tb.Helper()
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		tb.Fatal(err)
	}
	root := tb.TempDir()
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{VFsPerPF: 128}); err != nil {
		tb.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		tb.Fatal(err)
	}
	return topo
}

// A device never gets more attributes than the API allows: on a node with
// 24 GPUs, a NIC keeps its classes to the closest GPUs (4 PHB, 10 NODE,
// then SYS GPUs by address) up to 32 attributes, and the pool says what
// it left out.
func TestGPUClassesBeyondTheAttributeLimitAreTheFarthest(t *testing.T) {
	in := topology.Inventory{HostBridges: []topology.HostBridge{{Name: "pci0000:00", NUMA: 0}, {Name: "pci0000:40", NUMA: 0}, {Name: "pci0000:80", NUMA: 1}}}
	dev := func(addr, parent, hb string, numa int, bridge bool) {
		in.Devices = append(in.Devices, topology.PCIDevice{Address: addr, Parent: parent, HostBridge: hb, NUMA: numa, Bridge: bridge, Vendor: 0x15b3})
	}
	dev("0000:00:01.0", "", "pci0000:00", 0, true)
	dev("0000:01:00.0", "0000:00:01.0", "pci0000:00", 0, false)
	in.NICs = []topology.NIC{{PCI: "0000:01:00.0", Vendor: 0x15b3, Device: 0x1021, NUMA: 0, RDMA: "mlx5_0", Uverbs: "uverbs0", LinkLayer: "InfiniBand",
		Ports: []topology.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand"}}}}
	gpu := func(addr, hb string, numa int) {
		dev(addr, "", hb, numa, false)
		in.GPUs = append(in.GPUs, topology.GPU{PCI: addr, Vendor: 0x10de, Device: 0x2330, NUMA: numa})
	}
	for i := range 4 {
		gpu(fmt.Sprintf("0000:0%d:00.0", i+2), "pci0000:00", 0) // PHB: same host bridge, no shared bridge
	}
	for i := range 10 {
		gpu(fmt.Sprintf("0000:4%d:00.0", i), "pci0000:40", 0) // NODE
	}
	for i := range 10 {
		gpu(fmt.Sprintf("0000:8%d:00.0", i), "pci0000:80", 1) // SYS
	}
	topo := topology.Build(in)
	p := buildOne(t, topo, v1alpha1.Pool{Name: "railyard.io/pf", DeviceKind: v1alpha1.KindPF})
	if len(p.Devices) != 1 {
		t.Fatalf("%d devices, unpublished %+v", len(p.Devices), p.Unpublished)
	}
	d := p.Devices[0]
	if len(d.Attributes) != resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		t.Errorf("%d attributes, want the limit %d", len(d.Attributes), resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice)
	}
	count := map[string]int{}
	for name := range d.Attributes {
		if strings.HasPrefix(string(name), dra.GPUClassPrefix) {
			count[attrString(d, name)]++
		}
	}
	// 14 attributes of its own (no vfIndex, no pcieSwitch; its pool) leave
	// 18 for GPU classes.
	if count["PHB"] != 4 || count["NODE"] != 10 || count["SYS"] != 4 {
		t.Errorf("GPU classes kept %v, want 4 PHB, 10 NODE, 4 SYS", count)
	}
	if attrString(d, gpuAttr(t, "0000:83:00.0")) != "SYS" || attrString(d, gpuAttr(t, "0000:84:00.0")) != "" {
		t.Error("the SYS GPUs kept are not the lowest addresses")
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "6 of 24 GPU classes") {
		t.Errorf("warnings %q", p.Warnings)
	}
	if errs := checkSlices(dra.ResourceSlices("n", []dra.Pool{p}, 1)); len(errs) > 0 {
		t.Error(errs)
	}
}
