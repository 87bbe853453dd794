package dra_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

func TestDeviceNames(t *testing.T) {
	for pci, want := range map[string]string{
		"0000:18:00.2":  "pci-0000-18-00-2",
		"0000:1B:00.0":  "pci-0000-1b-00-0", // any spelling, one name
		"10000:e1:00.1": "pci-10000-e1-00-1",
	} {
		got, err := dra.DeviceName(pci)
		if err != nil || got != want {
			t.Errorf("DeviceName(%q) = %q, %v; want %q", pci, got, err, want)
		}
		back, err := dra.PCIAddress(got)
		if err != nil || !strings.EqualFold(strings.TrimLeft(back, "0"), strings.TrimLeft(pci, "0")) {
			t.Errorf("PCIAddress(%q) = %q, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "0000:18:00", "0000:18:20.0", "x"} {
		if _, err := dra.DeviceName(bad); !errors.Is(err, dra.ErrName) {
			t.Errorf("DeviceName(%q): %v, want ErrName", bad, err)
		}
	}
	for _, bad := range []string{"", "pci-0000-18-00", "pci-0000-1B-00-0", "pci-00000-18-00-0", "gpu-0", "pci-0000-18-00-0-1"} {
		if _, err := dra.PCIAddress(bad); !errors.Is(err, dra.ErrName) {
			t.Errorf("PCIAddress(%q): %v, want ErrName", bad, err)
		}
	}
}

// FuzzPCIAddress: device names come back from the API in allocation
// results. PCIAddress never panics and accepts exactly the names
// DeviceName makes.
func FuzzPCIAddress(f *testing.F) {
	for _, s := range []string{"pci-0000-18-00-2", "pci-10000-e1-00-1", "pci-0000-1B-00-0", "pci--", "pci-0-0-0-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pci, err := dra.PCIAddress(s)
		if err != nil {
			return
		}
		if name, err := dra.DeviceName(pci); err != nil || name != s {
			t.Fatalf("PCIAddress(%q) = %q, whose name is %q (%v)", s, pci, name, err)
		}
	})
}

func TestPoolNames(t *testing.T) {
	for _, tc := range []struct{ node, pool, want string }{
		{"node-a", "railyard.io/rdma_vf_a", "node-a/rdma-vf-a"},
		{"gpu-17.example.com", "example.com/IB", "gpu-17.example.com/ib"},
	} {
		got, err := dra.PoolName(tc.node, tc.pool)
		if err != nil || got != tc.want {
			t.Errorf("PoolName(%q, %q) = %q, %v; want %q", tc.node, tc.pool, got, err, tc.want)
		}
	}
	for _, tc := range [][2]string{{"Node_A", "railyard.io/x"}, {"n", "railyard.io/"}, {"n", "railyard.io/a b"}, {strings.Repeat("a", 250), "railyard.io/long"}} {
		if _, err := dra.PoolName(tc[0], tc[1]); !errors.Is(err, dra.ErrName) {
			t.Errorf("PoolName(%q, %q): %v, want ErrName", tc[0], tc[1], err)
		}
	}
}

func buildOne(t *testing.T, topo *topology.Topology, p v1alpha1.Pool) dra.Pool {
	t.Helper()
	pools, err := dra.Build("node-a", topo, []v1alpha1.Pool{p}, dra.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return pools[0]
}

func find(t *testing.T, p dra.Pool, pci string) resourceapi.Device {
	t.Helper()
	name := mustName(t, pci)
	for _, d := range p.Devices {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("%s (%s) not published", pci, name)
	return resourceapi.Device{}
}

// attrString renders an attribute value for comparison ("" when absent):
// strings as they are, ints in decimal, bools as true/false.
func attrString(d resourceapi.Device, name resourceapi.QualifiedName) string {
	a, ok := d.Attributes[name]
	switch {
	case !ok:
		return ""
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue)
	}
	return "?"
}

// Every attribute of one VF and one PF of a generated DGX H100, value by
// value: the first VF of the PF under GPU 0's switch, and a storage PF on
// a root of its own (no switch, no rail, no GPUDirect).
func TestAttributesOnDGXH100(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-h100", 2)
	if err != nil {
		t.Fatal(err)
	}
	vfs := buildOne(t, topo, v1alpha1.Pool{Name: "railyard.io/rdma_vf", DeviceKind: v1alpha1.KindVF})
	pfs := buildOne(t, topo, v1alpha1.Pool{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF})
	if vfs.Name != "node-a/rdma-vf" || len(vfs.Devices) != 24 || len(pfs.Devices) != 14 || len(vfs.Unpublished)+len(pfs.Unpublished) != 0 {
		t.Fatalf("pools %s (%d devices), %s (%d): want 24 VFs and 14 PFs, all published", vfs.Name, len(vfs.Devices), pfs.Name, len(pfs.Devices))
	}
	gpuClasses := func(classes ...string) map[string]string {
		out := map[string]string{}
		for i, g := range []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"} {
			out[string(gpuAttr(t, g))] = classes[i]
		}
		return out
	}
	for _, tc := range []struct {
		dev  resourceapi.Device
		want map[string]string
	}{
		{find(t, vfs, "0000:18:00.1"), map[string]string{
			"resource.kubernetes.io/pcieRoot": "pci0000:15", "resource.kubernetes.io/pciBusID": "0000:18:00.1",
			"resource.kubernetes.io/numaNode": "0",
			"railyard.io/isVF":                "true", "railyard.io/vfIndex": "0", "railyard.io/pfPCIAddress": "0000:18:00.0",
			"railyard.io/rdmaDevice": "mlx5_12", "railyard.io/linkLayer": "InfiniBand", "railyard.io/speedGbps": "400",
			"railyard.io/rail": "0", "railyard.io/pcieRootPort": "0000:15:01.0", "railyard.io/pcieSwitch": "0000:16:00.0",
			"railyard.io/vendorID": "15b3", "railyard.io/deviceID": "101e", "railyard.io/bestGPUClass": "PIX",
			"railyard.io/pool": "railyard.io/rdma_vf",
		}},
		{find(t, pfs, "0000:29:00.0"), map[string]string{
			"resource.kubernetes.io/pcieRoot": "pci0000:26", "resource.kubernetes.io/pciBusID": "0000:29:00.0",
			"resource.kubernetes.io/numaNode": "0",
			"railyard.io/isVF":                "false", "railyard.io/pfPCIAddress": "0000:29:00.0",
			"railyard.io/rdmaDevice": "mlx5_1", "railyard.io/linkLayer": "InfiniBand", "railyard.io/speedGbps": "100",
			"railyard.io/pcieRootPort": "0000:26:01.0",
			"railyard.io/vendorID":     "15b3", "railyard.io/deviceID": "101b", "railyard.io/bestGPUClass": "NODE",
			"railyard.io/pool": "railyard.io/rdma_pf",
		}},
	} {
		want := tc.want
		classes := gpuClasses("PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS")
		if tc.dev.Name == "pci-0000-29-00-0" {
			classes = gpuClasses("NODE", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS")
		}
		for k, v := range classes {
			want[k] = v
		}
		for name := range tc.dev.Attributes {
			if _, ok := want[string(name)]; !ok {
				t.Errorf("%s: unexpected attribute %s = %s", tc.dev.Name, name, attrString(tc.dev, name))
			}
		}
		for name, v := range want {
			if got := attrString(tc.dev, resourceapi.QualifiedName(name)); got != v {
				t.Errorf("%s: %s = %q, want %q", tc.dev.Name, name, got, v)
			}
		}
	}
}

// The leaf a NIC's port is cabled to (Options.Leaves, by RDMA device
// name, as the node's railyard.io/fabric-ports annotation names NICs) is
// its PF's and every one of its VFs' railyard.io/leaf; a NIC the fabric
// did not report gets no leaf attribute, not an empty one.
func TestLeafIsThePFsOnItsVFs(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-h100", 2)
	if err != nil {
		t.Fatal(err)
	}
	leaves := map[string]string{"mlx5_0": "leaf-r0-su1"} // the PF 0000:18:00.0
	for _, tc := range []struct {
		pool v1alpha1.Pool
		pci  string
		want string
	}{
		{v1alpha1.Pool{Name: "railyard.io/rdma_vf", DeviceKind: v1alpha1.KindVF}, "0000:18:00.1", "leaf-r0-su1"},
		{v1alpha1.Pool{Name: "railyard.io/rdma_vf", DeviceKind: v1alpha1.KindVF}, "0000:18:00.2", "leaf-r0-su1"},
		{v1alpha1.Pool{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF}, "0000:18:00.0", "leaf-r0-su1"},
		{v1alpha1.Pool{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF}, "0000:29:00.0", ""},
	} {
		pools, err := dra.Build("node-a", topo, []v1alpha1.Pool{tc.pool}, dra.Options{Leaves: leaves})
		if err != nil {
			t.Fatal(err)
		}
		d := find(t, pools[0], tc.pci)
		if got := attrString(d, dra.AttrLeaf); got != tc.want {
			t.Errorf("%s: leaf %q, want %q", tc.pci, got, tc.want)
		}
		if _, ok := d.Attributes[dra.AttrLeaf]; ok != (tc.want != "") {
			t.Errorf("%s: leaf attribute present %v, want %v", tc.pci, ok, tc.want != "")
		}
	}
}

// pcieRoot is what k8s.io/dynamic-resource-allocation/deviceattribute's
// GetPCIeRootAttributeByPCIBusID reads from sysfs: the first element
// under devices/ of the target of bus/pci/devices/<address>. The library
// (v0.35) reads /sys only, so the test follows the link in each
// generated tree the same way, for every device of every machine.
func TestPCIeRootIsWhatTheLibraryReadsFromSysfs(t *testing.T) {
	for _, m := range machines.Names() {
		root := t.TempDir()
		if err := machines.WriteSysfs(m, root, 2); err != nil {
			t.Fatal(err)
		}
		opts, err := machines.DiscoveryOptions(m)
		if err != nil {
			t.Fatal(err)
		}
		topo, err := opts.Discover(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		pools, err := dra.Build("n", topo, []v1alpha1.Pool{{Name: "r.io/vf", DeviceKind: "vf"}, {Name: "r.io/pf", DeviceKind: "pf"}}, dra.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pools {
			for _, d := range p.Devices {
				pci := attrString(d, dra.AttrPCIBusID)
				link := filepath.Join(root, "bus/pci/devices", pci)
				target, err := os.Readlink(link)
				if err != nil {
					t.Fatal(err)
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(link), target)
				}
				rel, err := filepath.Rel(filepath.Join(root, "devices"), target)
				if err != nil || !strings.HasPrefix(rel, "pci") {
					t.Fatalf("%s: %s -> %s is not under devices/pci*", m, link, target)
				}
				want := strings.Split(rel, string(filepath.Separator))[0]
				if got := attrString(d, dra.AttrPCIeRoot); got != want {
					t.Errorf("%s %s: pcieRoot %q, sysfs says %q", m, pci, got, want)
				}
				n++
			}
		}
		if n == 0 && m != "aws-p4d" && m != "aws-p5" {
			t.Errorf("%s: no device checked", m)
		}
	}
}

// Unhealthy devices are not published, by the one health rule: a PF whose
// port is DOWN takes its VFs with it; a VF whose own port is DOWN goes
// alone. Each says why in Unpublished.
func TestUnhealthyDevicesAreNotPublished(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.SetPortState(root, "mlx5_0", 1, fakesysfs.PortDown); err != nil { // PF 0000:18:00.0
		t.Fatal(err)
	}
	if err := fakesysfs.SetPortState(root, "mlx5_14", 1, fakesysfs.PortDown); err != nil { // VF 0000:29:00.2
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	vfs := buildOne(t, topo, v1alpha1.Pool{Name: "railyard.io/vf", DeviceKind: v1alpha1.KindVF})
	pfs := buildOne(t, topo, v1alpha1.Pool{Name: "railyard.io/pf", DeviceKind: v1alpha1.KindPF})
	gone := map[string]string{}
	for _, u := range append(vfs.Unpublished, pfs.Unpublished...) {
		gone[u.PCI] = u.Reason
	}
	for pci, reason := range map[string]string{
		"0000:18:00.0": "port 1 is DOWN", "0000:18:00.1": "PF 0000:18:00.0: port 1 is DOWN",
		"0000:18:00.2": "PF 0000:18:00.0", "0000:29:00.2": "port 1 is DOWN",
	} {
		if !strings.Contains(gone[pci], reason) {
			t.Errorf("%s: unpublished because %q, want %q", pci, gone[pci], reason)
		}
	}
	if len(gone) != 4 || len(vfs.Devices) != 21 || len(pfs.Devices) != 13 {
		t.Errorf("%d unpublished, %d VFs and %d PFs published; want 4, 21, 13", len(gone), len(vfs.Devices), len(pfs.Devices))
	}
	for _, d := range append(vfs.Devices, pfs.Devices...) {
		if _, bad := gone[attrString(d, dra.AttrPCIBusID)]; bad {
			t.Errorf("%s published", d.Name)
		}
	}
}

// A device in two pools is published in the first only; pools that map
// to one DRA pool name and shared pools are errors.
func TestBuildPoolsConflicts(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	pools, err := dra.Build("n", topo, []v1alpha1.Pool{
		{Name: "railyard.io/numa0", Selectors: v1alpha1.Selectors{NUMANodes: []int{0}}},
		{Name: "railyard.io/all"},
	}, dra.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pools[0].Devices) != 4 || len(pools[1].Devices) != 4 || len(pools[1].Unpublished) != 4 ||
		!strings.Contains(pools[1].Unpublished[0].Reason, "already published in DRA pool n/numa0") {
		t.Errorf("pools: %d and %d devices, second unpublished %+v", len(pools[0].Devices), len(pools[1].Devices), pools[1].Unpublished)
	}
	if _, err := dra.Build("n", topo, []v1alpha1.Pool{{Name: "a.io/rdma_x"}, {Name: "b.io/rdma-x"}}, dra.Options{}); !errors.Is(err, dra.ErrName) {
		t.Errorf("two pools named rdma-x: %v, want ErrName", err)
	}
	if _, err := dra.Build("n", topo, []v1alpha1.Pool{{Name: "a.io/s", DeviceKind: "vdpa"}}, dra.Options{}); err == nil || !strings.Contains(err.Error(), `unknown device kind "vdpa"`) {
		t.Errorf("a pool of kind vdpa: %v, want unknown device kind", err)
	}
	if _, err := dra.Build("n", nil, nil, dra.Options{}); err == nil {
		t.Error("no topology: no error")
	}
}

// dgxTree generates a dgx-h100 tree with 2 VFs per PF and returns it with
// a function discovering it as it is at the time of the call.
func dgxTree(t *testing.T) (string, func() *topology.Topology) {
	t.Helper()
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	return root, func() *topology.Topology {
		topo, err := discovery.Discover(context.Background(), root)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
}

// A VF whose RDMA device moved into a pod's network namespace (the host's
// sysfs no longer lists it under the VF) stays published as it was while a
// prepared claim holds it, so its name and attributes do not change under
// the claim; without the claim, or once its PF's link is down, it goes.
func TestPreparedDeviceStaysPublishedWhileOutOfView(t *testing.T) {
	root, discover := dgxTree(t)
	const vf = "0000:18:00.1"
	pool := v1alpha1.Pool{Name: "railyard.io/vf", DeviceKind: v1alpha1.KindVF}
	held := find(t, buildOne(t, discover(), pool), vf)

	// What the kernel shows the host once the RDMA device is in another
	// namespace (exclusive mode): no infiniband/ entry under the VF.
	dir, err := filepath.EvalSymlinks(filepath.Join(root, "bus/pci/devices", vf))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "infiniband")); err != nil {
		t.Fatal(err)
	}
	topo := discover()
	build := func(opts dra.Options) dra.Pool {
		pools, err := dra.Build("node-a", topo, []v1alpha1.Pool{pool}, opts)
		if err != nil {
			t.Fatal(err)
		}
		return pools[0]
	}
	published := func(p dra.Pool) *resourceapi.Device {
		for i := range p.Devices {
			if p.Devices[i].Name == held.Name {
				return &p.Devices[i]
			}
		}
		return nil
	}
	if p := build(dra.Options{}); published(p) != nil || len(p.Unpublished) != 1 || !strings.Contains(p.Unpublished[0].Reason, "no RDMA verbs device") {
		t.Errorf("unclaimed and out of view: published %v, unpublished %+v", published(p) != nil, p.Unpublished)
	}
	p := build(dra.Options{Prepared: map[string]resourceapi.Device{vf: held}})
	if got := published(p); got == nil || !equality.Semantic.DeepEqual(*got, held) || len(p.Held) != 1 || p.Held[0] != vf || len(p.Devices) != 24 {
		t.Errorf("claimed and out of view: published %+v, held %v, %d devices", got, p.Held, len(p.Devices))
	}
	other := held
	other.Name = "pci-0000-18-00-7"
	if p := build(dra.Options{Prepared: map[string]resourceapi.Device{vf: other}}); published(p) != nil || len(p.Held) != 0 {
		t.Error("a prepared device under another name was held")
	}

	if err := fakesysfs.SetPortState(root, "mlx5_0", 1, fakesysfs.PortDown); err != nil { // the VF's PF
		t.Fatal(err)
	}
	topo = discover()
	if p := build(dra.Options{Prepared: map[string]resourceapi.Device{vf: held}}); published(p) != nil || len(p.Held) != 0 {
		t.Error("claimed, out of view and its PF down: still published")
	}
}
