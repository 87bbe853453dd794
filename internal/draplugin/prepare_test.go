package draplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

const uidA = "0f1e2d3c-aaaa-4bbb-8ccc-000000000001"

// A claim of three VFs of a DGX H100 (allocated out of rail order, plus
// a GPU of another driver): one spec, one CDI device per VF holding
// exactly that VF's uverbs node and rdma_cm, and the claim's environment
// in rail order (rail 0's VF, rail 1's, then the VF whose PF is no rail).
func TestPrepareWritesOneSpecPerClaimInRailOrder(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	c := claim(t, uidA,
		nic("0000:29:00.2", "nic2"),
		result{driver: "gpu.nvidia.com", pool: node, pci: "gpu-0", request: "gpu0"},
		nic("0000:40:00.1", "nic1"),
		nic("0000:18:00.2", "nic0"))
	res, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	got := res[c.UID]
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	want := []kubeletplugin.Device{
		{Requests: []string{"nic0"}, PoolName: node + "/rdma-vf", DeviceName: "pci-0000-18-00-2", CDIDeviceIDs: []string{"rdma.railyard.io/claim=" + uidA + "-pci-0000-18-00-2"}},
		{Requests: []string{"nic1"}, PoolName: node + "/rdma-vf", DeviceName: "pci-0000-40-00-1", CDIDeviceIDs: []string{"rdma.railyard.io/claim=" + uidA + "-pci-0000-40-00-1"}},
		{Requests: []string{"nic2"}, PoolName: node + "/rdma-vf", DeviceName: "pci-0000-29-00-2", CDIDeviceIDs: []string{"rdma.railyard.io/claim=" + uidA + "-pci-0000-29-00-2"}},
	}
	// Each device's KEP-5304 metadata is the attributes it was published
	// with (compared apart: they are many).
	var metas []*kubeletplugin.DeviceMetadata
	for i := range got.Devices {
		metas = append(metas, got.Devices[i].Metadata)
		got.Devices[i].Metadata = nil
	}
	if diff := cmp.Diff(want, got.Devices); diff != "" {
		t.Fatalf("devices (-want +got):\n%s", diff)
	}
	for i, m := range metas {
		pci, _ := dra.PCIAddress(want[i].DeviceName)
		if m == nil || m.NetworkData != nil || m.Attributes[string(dra.AttrPCIBusID)].StringValue == nil ||
			*m.Attributes[string(dra.AttrPCIBusID)].StringValue != pci || m.Attributes[string(dra.AttrRDMADevice)].StringValue == nil {
			t.Errorf("%s: metadata %+v, want its published attributes (pciBusID %s, rdmaDevice)", want[i].DeviceName, m, pci)
		}
	}
	s := n.spec(t, c.UID)
	if s.Kind != "rdma.railyard.io/claim" || s.Version != "0.5.0" {
		t.Errorf("kind %q version %q, want rdma.railyard.io/claim 0.5.0 (hostPath needs 0.5.0)", s.Kind, s.Version)
	}
	if err := cdispec.ValidateVersion(s); err != nil {
		t.Error(err)
	}
	wantEnv := []string{
		"PCIDEVICE_RAILYARD_IO_RDMA_VF=0000:18:00.2,0000:40:00.1,0000:29:00.2",
		`PCIDEVICE_RAILYARD_IO_RDMA_VF_INFO={` +
			`"0000:18:00.2":{"generic":{"deviceID":"0000:18:00.2"},"rdma":{"rdma_cm":"/dev/infiniband/rdma_cm","rdma_dev":"mlx5_13","uverbs":"/dev/infiniband/uverbs15"}},` +
			`"0000:29:00.2":{"generic":{"deviceID":"0000:29:00.2"},"rdma":{"rdma_cm":"/dev/infiniband/rdma_cm","rdma_dev":"mlx5_14","uverbs":"/dev/infiniband/uverbs16"}},` +
			`"0000:40:00.1":{"generic":{"deviceID":"0000:40:00.1"},"rdma":{"rdma_cm":"/dev/infiniband/rdma_cm","rdma_dev":"mlx5_18","uverbs":"/dev/infiniband/uverbs20"}}}`,
		"RAILYARD_RDMA_DEVICES_RAILYARD_IO_RDMA_VF=mlx5_13,mlx5_18,mlx5_14",
		"NCCL_IB_HCA==mlx5_13,mlx5_18,mlx5_14",
	}
	wantNodes := map[string][]string{
		uidA + "-pci-0000-18-00-2": {"uverbs15", "rdma_cm"},
		uidA + "-pci-0000-40-00-1": {"uverbs20", "rdma_cm"},
		uidA + "-pci-0000-29-00-2": {"uverbs16", "rdma_cm"},
	}
	if len(s.Devices) != 3 {
		t.Fatalf("%d CDI devices, want 3", len(s.Devices))
	}
	for _, dev := range s.Devices {
		if diff := cmp.Diff(wantEnv, dev.ContainerEdits.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", dev.Name, diff)
		}
		var nodes []string
		for _, dn := range dev.ContainerEdits.DeviceNodes {
			name := strings.TrimPrefix(dn.Path, "/dev/infiniband/")
			if dn.HostPath != "/dev/infiniband/"+name || dn.Permissions != "rw" {
				t.Errorf("%s: node %+v", dev.Name, dn)
			}
			nodes = append(nodes, name)
		}
		if diff := cmp.Diff(wantNodes[dev.Name], nodes); diff != "" {
			t.Errorf("%s nodes (-want +got):\n%s", dev.Name, diff)
		}
	}
	if diff := cmp.Diff(map[types.UID][]string{uidA: {"0000:18:00.2", "0000:40:00.1", "0000:29:00.2"}}, d.Prepared()); diff != "" {
		t.Errorf("Prepared() (-want +got):\n%s", diff)
	}
}

// A pool's deviceNodes choices reach the CDI devices: no rdma_cm when
// turned off, the port's umad node when asked for.
func TestPrepareFollowsThePoolsDeviceNodes(t *testing.T) {
	no := false
	p := v1alpha1.Pool{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF, Delivery: v1alpha1.DeliveryDRA}
	p.DeviceNodes.RDMACM = &no
	p.DeviceNodes.UMAD = true
	n := newNode(t, "small", 0, p)
	pf := n.topo(t).NICs[0]
	// The generated tree has no MAD devices: add the PF's as the kernel
	// shows them (as internal/discovery's TestMADDevicesAreModelled does).
	if err := os.MkdirAll(filepath.Join(n.sysfs, "bus/pci/devices", pf.PCI, "infiniband_mad", "umad0"), 0o755); err != nil {
		t.Fatal(err)
	}
	pf = n.topo(t).NICs[0]
	d := n.driver(t)
	if pf.UMAD == "" || pf.Uverbs == "" {
		t.Fatalf("the generated PF %s has no umad or uverbs node (%q, %q)", pf.PCI, pf.UMAD, pf.Uverbs)
	}
	c := claim(t, uidA, result{driver: dra.DriverName, pool: node + "/rdma-pf", pci: pf.PCI, request: "nic"})
	res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	var nodes []string
	for _, dn := range n.spec(t, c.UID).Devices[0].ContainerEdits.DeviceNodes {
		nodes = append(nodes, dn.Path)
	}
	if diff := cmp.Diff([]string{"/dev/infiniband/" + pf.Uverbs, "/dev/infiniband/" + pf.UMAD}, nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// NCCLCrossNIC reaches every CDI device of a claim, after NCCL_IB_HCA.
func TestPrepareSetsNCCLCrossNICWhenConfigured(t *testing.T) {
	p := v1alpha1.Pool{Name: "railyard.io/rdma_pf", DeviceKind: v1alpha1.KindPF, Delivery: v1alpha1.DeliveryDRA}
	n := newNode(t, "small", 0, p)
	n.crossNIC = new(0)
	pf := n.topo(t).NICs[0]
	d := n.driver(t)
	c := claim(t, uidA, result{driver: dra.DriverName, pool: node + "/rdma-pf", pci: pf.PCI, request: "nic"})
	res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	env := n.spec(t, c.UID).Devices[0].ContainerEdits.Env
	if len(env) < 2 || env[len(env)-1] != "NCCL_CROSS_NIC=0" || !strings.HasPrefix(env[len(env)-2], "NCCL_IB_HCA=") {
		t.Errorf("env %q: want NCCL_IB_HCA then NCCL_CROSS_NIC=0 last", env)
	}
}

// Prepare twice answers the same; a restarted driver (a new one on the
// same state directory) still knows the claim, answers Prepare the same
// and Unprepares it (spec and record gone); Unprepare again, and of a
// claim never seen, succeeds.
func TestPrepareUnprepareAcrossRestart(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	first, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	again, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if first[c.UID].Err != nil {
		t.Fatal(first[c.UID].Err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("Prepare twice (-first +second):\n%s", diff)
	}
	restarted := n.driver(t)
	if diff := cmp.Diff(map[types.UID][]string{uidA: {"0000:18:00.1"}}, restarted.Prepared()); diff != "" {
		t.Fatalf("after restart Prepared() (-want +got):\n%s", diff)
	}
	if err := os.Remove(draplugin.SpecPath(n.cdi, c.UID)); err != nil {
		t.Fatal(err)
	}
	third, _ := restarted.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if diff := cmp.Diff(first, third); diff != "" {
		t.Fatalf("Prepare after restart (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); err != nil {
		t.Fatalf("Prepare after restart did not write the spec again: %v", err)
	}
	// Unprepare in yet another instance: the claim object is gone by then.
	third2 := n.driver(t)
	objs := []kubeletplugin.NamespacedObject{{UID: c.UID}, {UID: "never-prepared"}, {UID: "../../etc"}}
	for i := range 2 {
		res, err := third2.UnprepareResourceClaims(ctx, objs)
		if err != nil || len(res) != 3 || res[c.UID] != nil || res["never-prepared"] != nil || res["../../etc"] != nil {
			t.Fatalf("Unprepare #%d: %v, %v", i+1, res, err)
		}
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec still there after Unprepare: %v", err)
	}
	if p := n.driver(t).Prepared(); len(p) != 0 {
		t.Errorf("after Unprepare and a restart, Prepared() = %v", p)
	}
	// The device is free again for another claim.
	other := claim(t, "0f1e2d3c-aaaa-4bbb-8ccc-000000000002", nic("0000:18:00.1", "nic0"))
	res, _ := third2.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{other})
	if res[other.UID].Err != nil {
		t.Errorf("the freed device: %v", res[other.UID].Err)
	}
}

// Bad claims get their own error, naming the problem; good claims in
// the same call are prepared; nothing of a failed claim is kept.
func TestPrepareRefusesBadClaimsOneByOne(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	held := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{held}); res[held.UID].Err != nil {
		t.Fatal(res[held.UID].Err)
	}
	unallocated := claim(t, "00000000-0000-4000-8000-00000000000a")
	unallocated.Status.Allocation = nil
	cases := []struct {
		c    *resourceapi.ResourceClaim
		want string
	}{
		{unallocated, "not allocated"},
		{claim(t, "00000000-0000-4000-8000-00000000000b", nic("0000:99:00.1", "nic0")), "pci-0000-99-00-1 (0000:99:00.1) of pool \"node-a/rdma-vf\": not published on node node-a"},
		{claim(t, "00000000-0000-4000-8000-00000000000c", result{driver: "rdma.railyard.io", pool: node + "/rdma-vf", pci: "gpu-0", request: "x"}), "invalid DRA name"},
		{claim(t, "00000000-0000-4000-8000-00000000000d", result{driver: "rdma.railyard.io", pool: "node-b/rdma-vf", pci: "0000:18:00.2", request: "x"}), "no such pool on node node-a"},
		{claim(t, "00000000-0000-4000-8000-00000000000e", nic("0000:40:00.1", "ok"), nic("0000:18:00.1", "taken")), "held by claim ns/claim-" + uidA},
		{claim(t, "bad/uid", nic("0000:40:00.1", "nic0")), "invalid UID"},
	}
	good := claim(t, "00000000-0000-4000-8000-0000000000ff", nic("0000:40:00.2", "nic0"))
	in := []*resourceapi.ResourceClaim{good}
	for _, tc := range cases {
		in = append(in, tc.c)
	}
	res, err := d.PrepareResourceClaims(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if res[good.UID].Err != nil || len(res[good.UID].Devices) != 1 {
		t.Errorf("the good claim: %+v", res[good.UID])
	}
	for _, tc := range cases {
		err := res[tc.c.UID].Err
		if !errors.Is(err, draplugin.ErrClaim) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("claim %s: %v, want ErrClaim saying %q", tc.c.UID, err, tc.want)
		}
		if _, serr := os.Stat(draplugin.SpecPath(n.cdi, tc.c.UID)); serr == nil {
			t.Errorf("claim %s failed but has a spec", tc.c.UID)
		}
	}
	if p := d.Prepared(); len(p) != 2 {
		t.Errorf("Prepared() = %v, want the held and the good claim only", p)
	}
	// A claim prepared with one device cannot come back with another.
	moved := claim(t, uidA, nic("0000:40:00.1", "nic0"))
	if res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{moved}); !strings.Contains(errString(res[moved.UID].Err), "prepared before with other devices (0000:18:00.1)") {
		t.Errorf("same UID, other device: %v", res[moved.UID].Err)
	}
}

// A claim with no device of this driver needs nothing: no spec, no record.
func TestPrepareIgnoresOtherDrivers(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	c := claim(t, uidA, result{driver: "gpu.nvidia.com", pool: node, pci: "gpu-0", request: "gpu"})
	res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err != nil || len(res[c.UID].Devices) != 0 || len(d.Prepared()) != 0 {
		t.Fatalf("%+v, prepared %v", res[c.UID], d.Prepared())
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spec for a claim without Railyard devices: %v", err)
	}
}

// Before the first topology nothing can be prepared (and nothing is
// guessed).
func TestPrepareBeforeTheFirstTopology(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d, err := draplugin.New(draplugin.Config{NodeName: node, Pools: n.pools, DevRoot: n.dev, CDISpecDir: n.cdi, StateDir: n.state})
	if err != nil {
		t.Fatal(err)
	}
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	res, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if !errors.Is(res[c.UID].Err, draplugin.ErrNotReady) {
		t.Errorf("%v, want ErrNotReady", res[c.UID].Err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A device whose port went DOWN since the scheduler allocated it is not
// prepared: the claim's error says the device is unhealthy and why.
func TestPrepareRefusesADeviceThatWentUnhealthy(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	if err := fakesysfs.SetPortState(n.sysfs, "mlx5_0", 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(ctx, n.topo(t)); err != nil {
		t.Fatal(err)
	}
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if err := res[c.UID].Err; !errors.Is(err, draplugin.ErrClaim) || !strings.Contains(err.Error(), "not published: ") {
		t.Fatalf("%v, want ErrClaim saying the device is not published and why", err)
	}
}

// A spec that cannot be written fails the claim but keeps its record (the
// device stays held: the kubelet retries Prepare or calls Unprepare); the
// retry after the fault writes the spec, and Unprepare frees the device.
func TestPrepareRetriesAfterTheSpecCouldNotBeWritten(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	ctx := context.Background()
	d := n.driver(t)
	if err := os.WriteFile(n.cdi, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err == nil {
		t.Fatal("Prepare succeeded without a spec")
	}
	if p := n.driver(t).Prepared(); len(p[c.UID]) != 1 {
		t.Fatalf("after the failed Prepare the checkpoint holds %v, want the claim (its device held)", p)
	}
	if err := os.Remove(n.cdi); err != nil {
		t.Fatal(err)
	}
	res, _ = d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
	if res[c.UID].Err != nil {
		t.Fatal(res[c.UID].Err)
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); err != nil {
		t.Fatal(err)
	}
	if un, _ := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: c.UID}}); un[c.UID] != nil || len(d.Prepared()) != 0 {
		t.Fatalf("Unprepare: %v, prepared %v", un[c.UID], d.Prepared())
	}
}

// Admin access (KEP-5018, GA in 1.36): a claim whose request has
// adminAccess gets a device another claim holds, to look at it (the same
// verbs device in its CDI spec), without taking it: it is not in the DRA
// view, so railyard-cni never moves the owner's netdev, and a plain claim
// for the device is still refused while the owner holds it. Before, the
// admin claim failed to prepare ("held by claim ...").
func TestAdminAccessClaimLooksAtAHeldDevice(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	ctx := context.Background()
	const uidB, uidC = "0f1e2d3c-aaaa-4bbb-8ccc-00000000000b", "0f1e2d3c-aaaa-4bbb-8ccc-00000000000c"
	owner := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	admin := claim(t, uidB, nic("0000:18:00.1", "look"))
	admin.Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)
	plain := claim(t, uidC, nic("0000:18:00.1", "nic0"))
	for _, c := range []*resourceapi.ResourceClaim{owner, admin} {
		res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{c})
		if err != nil || res[c.UID].Err != nil {
			t.Fatalf("prepare %s: %v, %v", c.Name, err, res[c.UID].Err)
		}
	}
	res, _ := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{plain})
	if err := res[plain.UID].Err; err == nil || !strings.Contains(err.Error(), "is held by claim") {
		t.Errorf("a plain claim of the held device: %v, want refused", err)
	}
	if ownerSpec, adminSpec := n.spec(t, owner.UID), n.spec(t, admin.UID); len(adminSpec.Devices) != 1 {
		t.Errorf("admin spec %+v, want one device", adminSpec.Devices)
	} else if diff := cmp.Diff(ownerSpec.Devices[0].ContainerEdits.DeviceNodes, adminSpec.Devices[0].ContainerEdits.DeviceNodes); diff != "" {
		t.Errorf("admin spec's device nodes, want the owner's (-owner +admin):\n%s", diff)
	}
	v, err := draview.Read(n.view)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Claims {
		if c.UID == uidB && len(c.Devices) != 0 {
			t.Errorf("the admin claim's device is in the DRA view (railyard-cni would move the owner's netdev): %+v", c.Devices)
		}
		if c.UID == uidA && len(c.Devices) != 1 {
			t.Errorf("the owner's device is not in the DRA view: %+v", c.Devices)
		}
	}
	// The admin claim unprepared first, the owner keeps its device.
	if res, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: admin.UID}}); err != nil || res[admin.UID] != nil {
		t.Fatalf("unprepare admin: %v, %v", err, res)
	}
	if _, ok := d.Prepared()[owner.UID]; !ok {
		t.Error("unpreparing the admin claim dropped the owner's")
	}
}

// Config.Observe hears every kubelet call: a prepare that succeeded, one
// with a claim that failed, and an unprepare, each with its duration.
func TestObserveHearsEachKubeletCall(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	type call struct {
		Method string
		Failed bool
	}
	var got []call
	d, err := draplugin.New(draplugin.Config{NodeName: node, Pools: n.pools, DevRoot: n.dev, CDISpecDir: n.cdi, StateDir: n.state, ViewDir: n.view,
		Observe: func(method string, took time.Duration, failed bool) {
			if took <= 0 {
				t.Errorf("%s took %v", method, took)
			}
			got = append(got, call{method, failed})
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Update(context.Background(), n.topo(t)); err != nil {
		t.Fatal(err)
	}
	ok := claim(t, uidA, nic("0000:18:00.2", "nic0"))
	bad := claim(t, "0f1e2d3c-aaaa-4bbb-8ccc-000000000002")
	bad.Status.Allocation = nil
	for _, c := range [][]*resourceapi.ResourceClaim{{ok}, {ok, bad}} {
		if _, err := d.PrepareResourceClaims(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: uidA}}); err != nil {
		t.Fatal(err)
	}
	want := []call{{"prepare", false}, {"prepare", true}, {"unprepare", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed calls (-want +got):\n%s", diff)
	}
}
