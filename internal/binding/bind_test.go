package binding

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/containerdev"
)

// freeTokens returns n healthy tokens of NUMA node numa that no binding
// and no entry of taken holds, as kubelet would allocate them.
func freeTokens(t testing.TB, s *Store, v *View, numa, n int, taken map[string]bool) []string {
	t.Helper()
	bs, err := s.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ts := range Tokens(&v.Pools[0], bs, nil) {
		if ts.NUMA == numa && ts.Healthy && ts.Device == "" && !taken[ts.ID] && len(out) < n {
			out = append(out, ts.ID)
			taken[ts.ID] = true
		}
	}
	if len(out) != n {
		t.Fatalf("only %d free tokens on NUMA %d, want %d", len(out), numa, n)
	}
	return out
}

// TestBindGivesEachGPUItsRailNIC: on a DGX H100 with 4 VFs per NIC, a pod
// holding GPU g and one token of g's NUMA node gets a VF of g's rail NIC,
// for every GPU; the binding records the class and the CDI spec gives the
// VF's uverbs, rdma_cm, NCCL_IB_HCA and the view's NCCL settings
// (NCCL_CROSS_NIC, the ecmp profile's), never Railyard's defaults (a CDI
// edit would win over the pod's own variables).
func TestBindGivesEachGPUItsRailNIC(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 4)
	v.CrossNIC, v.Profile = new(0), "ecmp"
	s := newTestStore(t, v, Options{})
	taken := map[string]bool{}
	for i, g := range gpusOf(tp) {
		rail, ok := tp.Rail(g.PCI)
		if !ok {
			t.Fatalf("GPU %s has no rail", g.PCI)
		}
		tok := freeTokens(t, s, v, g.NUMA, 1, taken)
		pod := PodRef{Namespace: "ns", Name: "p" + string(rune('0'+i)), UID: "uid"}
		res, err := s.Bind(context.Background(), Request{Pod: pod, Sandbox: "sb", By: ByCNI,
			Containers: []ContainerTokens{{Name: "main", Tokens: tok, GPUs: []string{g.PCI}}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bound != 1 || len(res.Bindings) != 1 {
			t.Fatalf("bound %d, bindings %+v", res.Bound, res.Bindings)
		}
		b := res.Bindings[0]
		d, _ := v.Pools[0].Device(b.Device)
		if d.PF != rail.NIC {
			t.Errorf("GPU %s: bound %s on NIC %s, want its rail NIC %s (%s)", g.PCI, b.Device, d.PF, rail.NIC, rail.Class)
		}
		if b.Class != rail.Class.String() || b.Token != tok[0] || b.Pod != pod || b.By != ByCNI || b.Sandbox != "sb" {
			t.Errorf("binding %+v, want class %s", b, rail.Class)
		}
		var spec cdispec.Spec
		if err := json.Unmarshal(readFile(t, CDISpecPath(v.CDISpecDir, b.Token)), &spec); err != nil {
			t.Fatal(err)
		}
		if spec.Kind != CDIKind || len(spec.Devices) != 1 || spec.Devices[0].Name != b.Token {
			t.Fatalf("spec %+v", spec)
		}
		edits := spec.Devices[0].ContainerEdits
		wantNodes := []string{"/dev/infiniband/" + d.Uverbs, "/dev/infiniband/rdma_cm"}
		var nodes []string
		for _, n := range edits.DeviceNodes {
			nodes = append(nodes, n.Path)
			if n.HostPath != n.Path || n.Permissions != "rw" {
				t.Errorf("node %+v", n)
			}
		}
		if !slices.Equal(nodes, wantNodes) {
			t.Errorf("device nodes %v, want %v", nodes, wantNodes)
		}
		for _, e := range []string{"NCCL_IB_HCA==" + d.RDMA, "NCCL_CROSS_NIC=0", "NCCL_IB_QPS_PER_CONNECTION=4", containerdev.EnvName(testResource) + "=" + d.ID, containerdev.RDMAEnvName(testResource) + "=" + d.RDMA} {
			if !slices.Contains(edits.Env, e) {
				t.Errorf("env %v lacks %s", edits.Env, e)
			}
		}
		if slices.ContainsFunc(edits.Env, func(e string) bool {
			return strings.HasPrefix(e, "NCCL_SOCKET_IFNAME=") || strings.HasPrefix(e, "NCCL_IB_ROCE_VERSION_NUM=")
		}) {
			t.Errorf("env %v sets a default through CDI", edits.Env)
		}
		info := readFile(t, containerdev.DevInfoPath(v.DevInfoDir, testResource, b.Token))
		if !strings.Contains(string(info), `"pci-address":"`+d.ID+`"`) || !strings.Contains(string(info), `"pf-pci-address":"`+d.PF+`"`) {
			t.Errorf("device info %s", info)
		}
	}
}

// TestBindIsIdempotent: binding the same pod again changes nothing and
// rewrites a spec that went missing (a process died after the commit).
func TestBindIsIdempotent(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	g := tp.GPUs[0]
	req := Request{Pod: PodRef{Namespace: "ns", Name: "a"}, By: ByAgent,
		Containers: []ContainerTokens{{Name: "main", Tokens: freeTokens(t, s, v, g.NUMA, 2, map[string]bool{}), GPUs: []string{g.PCI}}}}
	first, err := s.Bind(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Took.Locked <= 0 || first.Took.LockWait < 0 || first.Took.List != 0 {
		t.Errorf("timing %+v: want work under the lock, no List (Store.Bind lists nothing)", first.Took)
	}
	before := readFile(t, filepath.Join(s.Dir(), bindingsFile))
	if err := os.Remove(CDISpecPath(v.CDISpecDir, first.Bindings[1].Token)); err != nil {
		t.Fatal(err)
	}
	req.Sandbox, req.By = "", ByCNI
	again, err := s.Bind(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.Bound != 0 || !slices.EqualFunc(first.Bindings, again.Bindings, sameBinding) {
		t.Errorf("second bind: bound %d, %+v, want %+v", again.Bound, again.Bindings, first.Bindings)
	}
	if after := readFile(t, filepath.Join(s.Dir(), bindingsFile)); string(after) != string(before) {
		t.Errorf("bindings rewritten:\n%s\n%s", before, after)
	}
	readFile(t, CDISpecPath(v.CDISpecDir, first.Bindings[1].Token))
	// Both specs of the container carry the same environment.
	var a, b cdispec.Spec
	_ = json.Unmarshal(readFile(t, CDISpecPath(v.CDISpecDir, first.Bindings[0].Token)), &a)
	_ = json.Unmarshal(readFile(t, CDISpecPath(v.CDISpecDir, first.Bindings[1].Token)), &b)
	if !slices.Equal(a.Devices[0].ContainerEdits.Env, b.Devices[0].ContainerEdits.Env) || len(a.Devices[0].ContainerEdits.Env) != 4 {
		t.Errorf("env differs between the container's tokens:\n%v\n%v", a.Devices[0].ContainerEdits.Env, b.Devices[0].ContainerEdits.Env)
	}
}

// TestBindReleasesTokenKubeletGaveToAnotherPod: a token bound to pod A
// and requested by pod B belongs to B now (kubelet gives a token to one
// container at a time): A's binding is released, B's made, and its spec
// names B's device.
func TestBindReleasesTokenKubeletGaveToAnotherPod(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	g0, g7 := tp.GPUs[0], tp.GPUs[7]
	tok := freeTokens(t, s, v, g0.NUMA, 1, map[string]bool{})
	ctx := context.Background()
	a, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: "a", UID: "1"}, Containers: []ContainerTokens{{Name: "c", Tokens: tok, GPUs: []string{g0.PCI}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Same name, new UID: a new pod (a StatefulSet's replacement).
	b, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: "a", UID: "2"}, Containers: []ContainerTokens{{Name: "c", Tokens: tok, GPUs: []string{g7.PCI}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Released) != 1 || b.Released[0].Pod.UID != "1" || b.Bound != 1 {
		t.Fatalf("released %+v, bound %d", b.Released, b.Bound)
	}
	if g0.NUMA == g7.NUMA {
		t.Fatal("test wants GPUs on two NUMA nodes")
	}
	// The token's NUMA node holds none of the new pod's GPUs: Topology
	// Manager did not align it, so it binds anywhere, near GPU 7.
	rail7, _ := tp.Rail(g7.PCI)
	d, _ := v.Pools[0].Device(b.Bindings[0].Device)
	if d.PF != rail7.NIC || a.Bindings[0].Device == b.Bindings[0].Device && d.PF != rail7.NIC {
		t.Errorf("rebound to %s (NIC %s), want GPU 7's rail %s", d.ID, d.PF, rail7.NIC)
	}
	bs, _ := s.Bindings()
	if len(bs) != 1 || bs[0].Pod.UID != "2" {
		t.Errorf("bindings %+v", bs)
	}
}

func TestBindRefusesBadRequests(t *testing.T) {
	v, _ := testView(t, "dgx-h100", 1)
	s := newTestStore(t, v, Options{})
	ctx := context.Background()
	tok := freeTokens(t, s, v, 0, 1, map[string]bool{})[0]
	for name, req := range map[string]Request{
		"not a token":    {Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Tokens: []string{"0000:18:00.2"}}}},
		"unknown pool":   {Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Tokens: []string{Token(PoolTag("x/y"), 0, 0)}}}},
		"token twice":    {Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Tokens: []string{tok}}, {Tokens: []string{tok}}}},
		"no namespace":   {Pod: PodRef{Name: "a"}, Containers: []ContainerTokens{{Tokens: []string{tok}}}},
		"too many on n0": {Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Tokens: manyTokens(v, 0, 500)}}},
	} {
		if _, err := s.Bind(ctx, req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if bs, _ := s.Bindings(); len(bs) != 0 {
		t.Errorf("a refused request left bindings %+v", bs)
	}
	_, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Tokens: []string{"0000:18:00.2"}}}})
	if !errors.Is(err, ErrUnknownToken) {
		t.Errorf("err %v, want ErrUnknownToken", err)
	}
	empty := NewStore(t.TempDir(), Options{})
	if _, err := empty.Bind(ctx, Request{}); !errors.Is(err, ErrNoView) {
		t.Errorf("no view: %v", err)
	}
}

func manyTokens(v *View, numa, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Token(v.Pools[0].Tag, numa, i)
	}
	return out
}

// TestReleaseSandboxAndGone: CNI DEL releases what its sandbox bound (and
// not a binding another sandbox confirmed since); GC releases a pod that
// PodResources no longer lists, but not a binding newer than its snapshot.
func TestReleaseSandboxAndGone(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	ctx := context.Background()
	taken := map[string]bool{}
	g := tp.GPUs[0]
	bind := func(name, sandbox string) Result {
		t.Helper()
		r, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: name}, Sandbox: sandbox, By: ByCNI,
			Containers: []ContainerTokens{{Name: "c", Tokens: freeTokens(t, s, v, g.NUMA, 1, taken), GPUs: []string{g.PCI}}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := bind("a", "sb-a")
	bind("b", "sb-b")
	if got, err := s.ReleaseSandbox(ctx, PodRef{Namespace: "ns", Name: "a"}, "sb-other"); err != nil || len(got) != 0 {
		t.Errorf("other sandbox released %+v, %v", got, err)
	}
	got, err := s.ReleaseSandbox(ctx, PodRef{Namespace: "ns", Name: "a"}, "sb-a")
	if err != nil || len(got) != 1 || got[0].Token != a.Bindings[0].Token {
		t.Fatalf("released %+v, %v", got, err)
	}
	if _, err := os.Stat(CDISpecPath(v.CDISpecDir, a.Bindings[0].Token)); !os.IsNotExist(err) {
		t.Errorf("released token's spec still there: %v", err)
	}
	snap := time.Now()
	c := bind("c", "") // after the snapshot: kept though not listed
	got, err = s.ReleaseGone(ctx, Holders{At: snap, Pods: map[string]PodRef{}}, time.Hour)
	if err != nil || len(got) != 1 || got[0].Pod.Name != "b" {
		t.Fatalf("GC released %+v, %v; want b only", got, err)
	}
	bs, _ := s.Bindings()
	if len(bs) != 1 || bs[0].Token != c.Bindings[0].Token {
		t.Errorf("left %+v", bs)
	}
}

// TestReconcileHealsAndCleans: after a process died between the commit
// and the spec, Reconcile writes the spec; a spec and a device-info file
// with no binding, and stray temporary files, are removed.
func TestReconcileHealsAndCleans(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	crash := true
	s := newTestStore(t, v, Options{Fault: func(step string) error {
		if crash && step == StepWriteSpec {
			return errors.New("killed")
		}
		return nil
	}})
	ctx := context.Background()
	tok := freeTokens(t, s, v, tp.GPUs[0].NUMA, 1, map[string]bool{})
	if _, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: "a"}, Containers: []ContainerTokens{{Name: "c", Tokens: tok}}}); err == nil {
		t.Fatal("bind survived its crash")
	}
	crash = false
	stray := CDISpecPath(v.CDISpecDir, Token(v.Pools[0].Tag, 0, 999))
	strayInfo := containerdev.DevInfoPath(v.DevInfoDir, testResource, Token(v.Pools[0].Tag, 0, 999))
	for _, p := range []string{stray, strayInfo, filepath.Join(s.Dir(), tempPrefix+"x"+tempSuffix)} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	readFile(t, CDISpecPath(v.CDISpecDir, tok[0]))
	for _, p := range []string{stray, strayInfo, filepath.Join(s.Dir(), tempPrefix+"x"+tempSuffix)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}

// TestBindUnalignedTokensFollowTheGPUs: Topology Manager policy none gave
// a pod with two GPUs on each NUMA node four tokens of NUMA node 0; two
// stay on node 0 near its GPUs, two go near the node-1 GPUs: every GPU gets
// its rail NIC.
func TestBindUnalignedTokensFollowTheGPUs(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	var gpus []string
	per := map[int]int{}
	for _, g := range tp.GPUs {
		if per[g.NUMA] < 2 {
			per[g.NUMA]++
			gpus = append(gpus, g.PCI)
		}
	}
	if len(gpus) != 4 {
		t.Fatalf("GPUs %v", gpus)
	}
	res, err := s.Bind(context.Background(), Request{Pod: PodRef{Namespace: "ns", Name: "a"},
		Containers: []ContainerTokens{{Name: "c", Tokens: freeTokens(t, s, v, 0, 4, map[string]bool{}), GPUs: gpus}}})
	if err != nil {
		t.Fatal(err)
	}
	var pfs []string
	for _, b := range res.Bindings {
		d, _ := v.Pools[0].Device(b.Device)
		pfs = append(pfs, d.PF)
	}
	for _, g := range gpus {
		rail, _ := tp.Rail(g)
		if !slices.Contains(pfs, rail.NIC) {
			t.Errorf("GPU %s: rail NIC %s not among the bound PFs %v", g, rail.NIC, pfs)
		}
	}
}

// TestBindMadeUpTokenStaysOnTheShortNodesRail: found by the e2e on
// roce-8gpu-4nic (2 GPUs per NIC, 2 VFs each): a pod with GPUs 07, 0b
// (NUMA 0) and 85, 86 (NUMA 1, both on NIC 84) holding three NUMA-0 tokens
// and one NUMA-1 token; the made-up token must take NIC 84's second VF,
// not a VF of NIC 8b, which GPUs 89 and 8a need.
func TestBindMadeUpTokenStaysOnTheShortNodesRail(t *testing.T) {
	v, tp := testView(t, "roce-8gpu-4nic", 2)
	s := newTestStore(t, v, Options{})
	taken := map[string]bool{}
	toks := append(freeTokens(t, s, v, 0, 3, taken), freeTokens(t, s, v, 1, 1, taken)...)
	gpus := []string{"0000:07:00.0", "0000:0b:00.0", "0000:85:00.0", "0000:86:00.0"}
	for _, g := range gpus {
		if _, ok := tp.GPU(g); !ok {
			t.Fatalf("no GPU %s", g)
		}
	}
	res, err := s.Bind(context.Background(), Request{Pod: PodRef{Namespace: "ns", Name: "a"},
		Containers: []ContainerTokens{{Name: "c", Tokens: toks, GPUs: gpus}}})
	if err != nil {
		t.Fatal(err)
	}
	perPF := map[string]int{}
	for _, b := range res.Bindings {
		d, _ := v.Pools[0].Device(b.Device)
		perPF[d.PF]++
	}
	if perPF["0000:84:00.0"] != 2 || perPF["0000:8b:00.0"] != 0 {
		t.Errorf("devices per NIC %v: want both of 84's VFs and none of 8b's", perPF)
	}
}

// TestViewKeepsNCCLCrossNICAtTheTop: the view's NCCL settings are top
// level fields, ncclCrossNIC where an older agent wrote it.
func TestViewKeepsNCCLCrossNICAtTheTop(t *testing.T) {
	b, err := json.Marshal(View{NCCL: containerdev.NCCL{CrossNIC: new(0), Profile: "ecmp"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ncclCrossNIC":0`, `"ncclProfile":"ecmp"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("view %s lacks %s", b, want)
		}
	}
	var v View
	if err := json.Unmarshal([]byte(`{"ncclCrossNIC":1}`), &v); err != nil || v.CrossNIC == nil || *v.CrossNIC != 1 {
		t.Errorf("an older view's ncclCrossNIC: %v, %v", v.CrossNIC, err)
	}
}
