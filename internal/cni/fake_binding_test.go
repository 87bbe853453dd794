package cni

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/topology"
)

const lateRes = "railyard.io/rdma_vf"

// podResourcesStandIn is kubelet's PodResources List with a set answer.
type podResourcesStandIn struct {
	resp []podlist.Pod
}

func (p *podResourcesStandIn) List(context.Context) ([]podlist.Pod, error) { return p.resp, nil }

// lateWorld is a node (a vfEnv: the fake one, or the VM's igb VFs) with a
// binding store whose view has one GPU and the node's two VFs in a
// sandbox pool, and kubelet's PodResources showing pod ml/trainer holding
// the GPU and two tokens of NUMA node 0. The binding store, its view and
// PodResources are the same on both: only the VFs differ.
type lateWorld struct {
	vfEnv
	dir, cdi string
	tokens   []string
	pr       *podResourcesStandIn
}

func newLateWorld(e vfEnv) *lateWorld {
	t := e.T()
	w := &lateWorld{vfEnv: e, dir: filepath.Join(t.TempDir(), "binding"), cdi: filepath.Join(t.TempDir(), "cdi")}
	active := []topology.Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Ethernet"}}
	pf, vf0, vf1 := e.PFPCI(), e.PCI(0), e.PCI(1)
	tp := topology.Build(topology.Inventory{
		GPUs: []topology.GPU{{PCI: "0000:02:00.0", NUMA: 0}},
		NICs: []topology.NIC{{PCI: pf, NUMA: 0, RDMA: "mlx5_0", Uverbs: "uverbs0", Netdev: "ens1f0", LinkLayer: "Ethernet", Ports: active,
			VFs: []topology.VF{{Index: 2, PCI: vf0, RDMA: "mlx5_3", Uverbs: "uverbs3"}, {Index: 3, PCI: vf1, RDMA: "mlx5_4", Uverbs: "uverbs4"}}}},
		PairClasses: []topology.PairClass{{GPU: "0000:02:00.0", NIC: pf, Class: topology.PIX}},
	})
	v := binding.ViewFromTopology(tp)
	v.Pools = []binding.Pool{{Resource: lateRes, Policy: "gpu-aware", RDMACM: true, Devices: []binding.Device{
		{ID: vf0, PF: pf, NUMA: 0, Rail: 0, RDMA: "mlx5_3", Uverbs: "uverbs3", Healthy: true},
		{ID: vf1, PF: pf, NUMA: 0, Rail: 0, RDMA: "mlx5_4", Uverbs: "uverbs4", Healthy: true},
	}}}
	v.GPUResourceNames, v.CDISpecDir, v.DevRoot, v.NCCLIBHCA = []string{"nvidia.com/gpu"}, w.cdi, "/dev", true
	must(t, binding.NewStore(w.dir, binding.Options{}).Publish(context.Background(), v))
	tag := binding.PoolTag(lateRes)
	w.tokens = []string{binding.Token(tag, 0, 0), binding.Token(tag, 0, 1)}
	w.pr = &podResourcesStandIn{resp: []podlist.Pod{{Namespace: "ml", Name: "trainer", Containers: []podlist.Container{{Name: "main", Devices: []podlist.Devices{
		{Resource: "nvidia.com/gpu", IDs: []string{"0000:02:00.0"}}, {Resource: lateRes, IDs: w.tokens}}}}}}}
	return w
}

func (w *lateWorld) plugin() *Plugin {
	p := w.P()
	p.PodResources = w.pr
	return p
}

// conf is the configuration of VF 0 with deviceID set to device
// (extra may remove it).
func (w *lateWorld) conf(device string, extra map[string]any) []byte {
	if _, ok := extra["deviceID"]; ok {
		return w.Conf(0, extra)
	}
	return w.Conf(0, with(extra, "deviceID", device))
}

const podCNIArgs = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer;K8S_POD_INFRA_CONTAINER_ID=sb1;K8S_POD_UID=u1"

func (w *lateWorld) bindings() []binding.Binding {
	w.T().Helper()
	bs, err := binding.NewStore(w.dir, binding.Options{}).Bindings()
	must(w.T(), err)
	return bs
}

// TestLateBindingMultusTokenFakeVF: Multus passes a token as deviceID and
// pciBusID; ADD binds both of the pod's tokens, attaches the VF bound to
// this one (VF settings and the RDMA move through the fake), and the
// token's CDI spec exists; DEL restores the VF and releases the bindings
// and specs. The VF-through-PF settings and RDMA moves are the fake's.
func TestLateBindingMultusTokenFakeVF(t *testing.T) {
	checkLateBindingMultusToken(newLateWorld(newWorld(t)))
}

func checkLateBindingMultusToken(w *lateWorld) {
	t := w.T()
	p := w.plugin()
	ctx := context.Background()
	conf := w.conf(w.tokens[0], map[string]any{"pciBusID": w.tokens[0], "bindingDir": w.dir, "CNIDeviceInfoFile": infoFile(w.InfoDir(), netName(w), "sb1", "net1")})
	a := args("sb1", w.Pod(0), "net1", conf)
	a.PluginArgs = podCNIArgs
	res, err := p.Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	bs := w.bindings()
	if len(bs) != 2 || bs[0].Sandbox != "sb1" || bs[0].Pod.UID != "u1" || bs[0].By != binding.ByCNI || bs[0].Class != "PIX" {
		t.Fatalf("bindings %+v", bs)
	}
	bound := bs[0].Device
	if bs[0].Token != w.tokens[0] {
		bound = bs[1].Device
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].PciID != bound {
		t.Fatalf("attached %+v, want the device bound to %s (%s)", res.Interfaces, w.tokens[0], bound)
	}
	if !w.InPod(w.Pod(0), "net1") {
		t.Fatal("net1 not in the pod")
	}
	for _, tk := range w.tokens {
		if _, err := os.Stat(binding.CDISpecPath(w.cdi, tk)); err != nil {
			t.Errorf("spec of %s: %v", tk, err)
		}
	}
	if err := p.Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	if bound == w.PCI(0) {
		w.Pristine()
	}
	if bs := w.bindings(); len(bs) != 0 {
		t.Errorf("bindings left after DEL: %+v", bs)
	}
	if _, err := os.Stat(binding.CDISpecPath(w.cdi, w.tokens[0])); !os.IsNotExist(err) {
		t.Errorf("spec left after DEL: %v", err)
	}
	// DEL again: still fine.
	if err := p.Del(ctx, a); err != nil {
		t.Fatal(err)
	}
}

// TestLateBindingByResourceNameFakeVF: without Multus, two networks of
// one sandbox name the pool; each ADD attaches a different bound VF; the
// first DEL keeps the bindings (the other network still holds its VF),
// the last releases them.
func TestLateBindingByResourceNameFakeVF(t *testing.T) {
	checkLateBindingByResourceName(newLateWorld(newWorld(t)))
}

func checkLateBindingByResourceName(w *lateWorld) {
	t := w.T()
	p := w.plugin()
	ctx := context.Background()
	var attached []string
	var as []Args
	for _, ifname := range []string{"net1", "net2"} {
		conf := w.conf("", map[string]any{"deviceID": nil, "resourceName": lateRes, "bindingDir": w.dir,
			"mac": nil, "CNIDeviceInfoFile": infoFile(w.InfoDir(), netName(w), "sb1", ifname)})
		a := args("sb1", w.Pod(0), ifname, conf)
		a.PluginArgs = podCNIArgs
		res, err := p.Add(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", ifname, err)
		}
		attached = append(attached, res.Interfaces[0].PciID)
		as = append(as, a)
	}
	if attached[0] == attached[1] {
		t.Fatalf("both networks attached %s", attached[0])
	}
	must(t, p.Del(ctx, as[0]))
	if bs := w.bindings(); len(bs) != 2 {
		t.Fatalf("first DEL released bindings while net2 holds its VF: %+v", bs)
	}
	must(t, p.Del(ctx, as[1]))
	if bs := w.bindings(); len(bs) != 0 {
		t.Fatalf("bindings left after the last DEL: %+v", bs)
	}
	if _, ok := w.HostLink(w.Orig().Name); !ok {
		t.Error("VF not back on the host")
	}
}

// TestLateBindingRefusals: no pod in CNI_ARGS (code 4), no view published
// yet (code 11, try again), a pod PodResources does not list (11), a
// token of no pool (7); none leaves a binding or a record.
func TestLateBindingRefusals(t *testing.T) {
	w := newLateWorld(newWorld(t))
	ctx := context.Background()
	conf := func(tok, dir string) []byte { return w.conf(tok, map[string]any{"bindingDir": dir}) }
	cases := []struct {
		name    string
		a       Args
		p       *Plugin
		code    uint
		binding bool
	}{
		{"no pod args", Args{ContainerID: "sb1", Netns: pod1, IfName: "net1", Config: conf(w.tokens[0], w.dir)}, w.plugin(), types.ErrInvalidEnvironmentVariables, false},
		{"no view", Args{ContainerID: "sb1", Netns: pod1, IfName: "net1", PluginArgs: podCNIArgs, Config: conf(w.tokens[0], filepath.Join(t.TempDir(), "none"))}, w.plugin(), types.ErrTryAgainLater, false},
		{"pod not listed", Args{ContainerID: "sb1", Netns: pod1, IfName: "net1", PluginArgs: "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=other", Config: conf(w.tokens[0], w.dir)}, w.plugin(), types.ErrTryAgainLater, false},
		{"token of no pool", Args{ContainerID: "sb1", Netns: pod1, IfName: "net1", PluginArgs: podCNIArgs, Config: conf(binding.Token(binding.PoolTag("x.io/y"), 0, 0), w.dir)}, w.plugin(), types.ErrInvalidNetworkConfig, false},
	}
	for _, c := range cases {
		_, err := c.p.Add(ctx, c.a)
		if err == nil {
			t.Errorf("%s: ADD succeeded", c.name)
			continue
		}
		if got := Code(err); got != c.code {
			t.Errorf("%s: code %d, want %d (%v)", c.name, got, c.code, err)
		}
		var coded *codedError
		if !errors.As(err, &coded) {
			t.Errorf("%s: error not coded: %v", c.name, err)
		}
		if bs := w.bindings(); len(bs) != 0 {
			t.Errorf("%s: bindings %+v", c.name, bs)
		}
	}
	w.Pristine()
}

// TestResourceNameOfAllocatedPoolFakeVF: without Multus, a network naming
// a pool without late binding attaches the device kubelet allocated to
// the pod from it (PodResources lists PCI addresses); a second network of
// the same sandbox finds it attached and tries again later; DEL returns
// the VF and releases no binding (there is none). PodResources listing
// tokens of a pool the view does not name yet (agent starting) is
// try-again-later, and an ID that is no PCI address is a configuration
// error. The VF settings are the fake's.
func TestResourceNameOfAllocatedPoolFakeVF(t *testing.T) {
	checkResourceNameOfAllocatedPool(newLateWorld(newWorld(t)))
}

func checkResourceNameOfAllocatedPool(w *lateWorld) {
	t := w.T()
	const allocRes = "railyard.io/rdma_pf_alloc"
	w.pr.resp = append(w.pr.resp, podlist.Pod{Namespace: "ml", Name: "alloc", Containers: []podlist.Container{
		{Name: "init", Devices: []podlist.Devices{{Resource: "other.io/x", IDs: []string{"0000:99:00.0"}}}},
		{Name: "main", Devices: []podlist.Devices{{Resource: allocRes, IDs: []string{w.PCI(0)}}}}}})
	p := w.plugin()
	ctx := context.Background()
	conf := func(cid, ifname, res string) []byte {
		return w.conf("", map[string]any{"deviceID": nil, "resourceName": res, "bindingDir": w.dir,
			"mac": nil, "CNIDeviceInfoFile": infoFile(w.InfoDir(), netName(w), cid, ifname)})
	}
	a := args("sb2", w.Pod(0), "net1", conf("sb2", "net1", allocRes))
	a.PluginArgs = "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=alloc"
	res, err := p.Add(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].PciID != w.PCI(0) {
		t.Fatalf("attached %+v, want the allocated %s", res.Interfaces, w.PCI(0))
	}
	if !w.InPod(w.Pod(0), "net1") {
		t.Fatal("net1 not in the pod")
	}
	a2 := args("sb2", w.Pod(0), "net2", conf("sb2", "net2", allocRes))
	a2.PluginArgs = a.PluginArgs
	if _, err := p.Add(ctx, a2); Code(err) != types.ErrTryAgainLater {
		t.Errorf("second network of the sandbox: %v, want try again later", err)
	}
	must(t, p.Del(ctx, a))
	must(t, p.Del(ctx, a))
	if bs := w.bindings(); len(bs) != 0 {
		t.Errorf("bindings %+v", bs)
	}
	w.Pristine()

	// Tokens of a pool the view does not name yet, and an ID that is no
	// PCI address.
	w.pr.resp = []podlist.Pod{{Namespace: "ml", Name: "alloc", Containers: []podlist.Container{{Name: "main", Devices: []podlist.Devices{
		{Resource: "railyard.io/later", IDs: []string{binding.Token(binding.PoolTag("railyard.io/later"), 0, 0)}},
		{Resource: "railyard.io/odd", IDs: []string{"mlx5_0"}}}}}}}
	for res, code := range map[string]uint{"railyard.io/later": types.ErrTryAgainLater, "railyard.io/odd": types.ErrInvalidNetworkConfig} {
		a := args("sb3", w.Pod(0), "net1", conf("sb3", "net1", res))
		a.PluginArgs = "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=alloc"
		if _, err := p.Add(ctx, a); Code(err) != code {
			t.Errorf("%s: %v, want code %d", res, err, code)
		}
	}
	// A pod not listed (yet): try again later.
	a = args("sb4", w.Pod(0), "net1", conf("sb4", "net1", allocRes))
	a.PluginArgs = "K8S_POD_NAMESPACE=ml;K8S_POD_NAME=unlisted"
	if _, err := p.Add(ctx, a); Code(err) != types.ErrTryAgainLater {
		t.Errorf("pod not listed: %v, want try again later", err)
	}
	w.Pristine()
}

// TestResourceNameNetworkOfAPodWithoutDevicesAttachesNothingFakeVF:
// without Multus every pod of the node gets the network (containerd's
// max_conf_num), including pods that ask no RDMA device (the agent's own,
// system pods): a listed pod holding no device or token of the pool gets
// an empty result, CHECK passes and DEL is a no-op, for a pool with and
// without late binding. Nothing is bound or recorded.
func TestResourceNameNetworkOfAPodWithoutDevicesAttachesNothingFakeVF(t *testing.T) {
	checkResourceNameNetworkOfAPodWithoutDevicesAttachesNothing(newLateWorld(newWorld(t)))
}

func checkResourceNameNetworkOfAPodWithoutDevicesAttachesNothing(w *lateWorld) {
	t := w.T()
	w.pr.resp = append(w.pr.resp, podlist.Pod{Namespace: "kube-system", Name: "dns", Containers: []podlist.Container{{Name: "main"}}})
	p := w.plugin()
	ctx := context.Background()
	for _, res := range []string{lateRes, "railyard.io/rdma_pf_alloc"} {
		conf := w.conf("", map[string]any{"deviceID": nil, "resourceName": res, "bindingDir": w.dir, "mac": nil})
		a := args("sb5", w.Pod(0), "eth1", conf)
		a.PluginArgs = "K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=dns"
		r, err := p.Add(ctx, a)
		if err != nil || len(r.Interfaces) != 0 || len(r.IPs) != 0 {
			t.Fatalf("%s: ADD = %+v, %v; want an empty result", res, r, err)
		}
		if err := p.Check(ctx, a); err != nil {
			t.Errorf("%s: CHECK: %v", res, err)
		}
		must(t, p.Del(ctx, a))
		if bs := w.bindings(); len(bs) != 0 {
			t.Errorf("%s: bindings %+v", res, bs)
		}
	}
	w.Pristine()
}
