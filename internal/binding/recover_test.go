package binding

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecoverRebuildsHeldBindingsFromSpecs: bindings.json lost while two
// pods run. Recover rebuilds the binding kubelet still backs from its CDI
// spec (same device, pod, container, class); a spec whose device is now
// bound to another token is reported unknown, not rebound; a held token
// without a spec is left alone; and Reconcile keeps the unknown's spec.
func TestRecoverRebuildsHeldBindingsFromSpecs(t *testing.T) {
	t.Parallel()
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	ctx := context.Background()
	g := gpusOf(tp)[0]
	taken := map[string]bool{}
	toks := freeTokens(t, s, v, g.NUMA, 3, taken)
	lis := &fakeLister{}
	lis.set(podRes("ns", "a", []string{g.PCI}, toks[:1]), podRes("ns", "b", []string{g.PCI}, toks[1:2]), podRes("ns", "c", []string{g.PCI}, toks[2:]))
	for _, pod := range []string{"a", "b"} {
		if _, err := (&Binder{Store: s, Lister: lis}).BindPod(ctx, PodRef{Namespace: "ns", Name: pod}, "", ByAgent); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.Dir(), bindingsFile)); err != nil {
		t.Fatal(err)
	}
	// b's device is taken by another token meanwhile: b's spec is stale.
	stolen := before[1]
	stolen.Token, stolen.Pod = toks[2], PodRef{Namespace: "ns", Name: "c"}
	if err := s.writeBindings([]Binding{stolen}); err != nil {
		t.Fatal(err)
	}
	h := HoldersFrom(lis.resp, v, before[0].At.Add(1))
	rec, err := s.Recover(ctx, lis.resp, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Bindings) != 1 {
		t.Fatalf("recovered %+v, want a's binding", rec.Bindings)
	}
	got, want := rec.Bindings[0], before[0]
	if d := cmp.Diff([]string{want.Token, want.Device, "ns/a", "main", want.Class}, []string{got.Token, got.Device, got.Pod.String(), got.Container, got.Class}); d != "" {
		t.Errorf("recovered binding (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string][]string{testResource: {toks[1]}}, rec.Unknown); d != "" {
		t.Errorf("unknown (-want +got):\n%s", d)
	}
	if err := s.Reconcile(ctx, rec.Tokens()...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(CDISpecPath(v.CDISpecDir, toks[1])); err != nil {
		t.Errorf("Reconcile removed the spec of a held token whose device is unknown: %v", err)
	}
}

// TestRefusedPoolKeepsBoundTokens: a refused pool binds no new device, but
// a pod whose tokens are bound (a container restart) still gets them.
func TestRefusedPoolKeepsBoundTokens(t *testing.T) {
	t.Parallel()
	v, tp := testView(t, "dgx-h100", 2)
	s := newTestStore(t, v, Options{})
	ctx := context.Background()
	g := gpusOf(tp)[0]
	toks := freeTokens(t, s, v, g.NUMA, 2, map[string]bool{})
	req := func(name, tok string) Request {
		return Request{Pod: PodRef{Namespace: "ns", Name: name}, By: ByAgent, Containers: []ContainerTokens{{Name: "main", Tokens: []string{tok}, GPUs: []string{g.PCI}}}}
	}
	if _, err := s.Bind(ctx, req("bound", toks[0])); err != nil {
		t.Fatal(err)
	}
	v.Pools[0].Refused = "a test"
	if err := s.Publish(ctx, *v); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bind(ctx, req("bound", toks[0])); err != nil {
		t.Errorf("bound tokens in a refused pool: %v", err)
	}
	if _, err := s.Bind(ctx, req("new", toks[1])); err == nil {
		t.Error("a refused pool bound a new token")
	}
}

// FuzzSpecDevice reads arbitrary bytes as a token's CDI spec: never a
// panic, and a device only when it is one of the pool's.
func FuzzSpecDevice(f *testing.F) {
	for _, s := range []string{
		`{"cdiVersion":"0.5.0","kind":"railyard.io/binding","devices":[{"name":"T","containerEdits":{"deviceNodes":[{"path":"/dev/infiniband/uverbs0"},{"path":"/dev/infiniband/rdma_cm"}]}}]}`,
		`{"devices":[{"name":"T","containerEdits":{"deviceNodes":[null,{"path":"/dev/infiniband/uverbs1"},{"path":"/dev/infiniband/uverbs2"}]}}]}`,
		`{}`, `[]`, `null`, ``, `{"devices":[{"name":"T"}]}`,
	} {
		f.Add([]byte(s))
	}
	v, _ := testView(f, "dgx-h100", 1)
	f.Fuzz(func(t *testing.T, raw []byte) {
		vv := *v
		vv.CDISpecDir = t.TempDir()
		const tok = "T"
		if err := os.WriteFile(CDISpecPath(vv.CDISpecDir, tok), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		p := &vv.Pools[0]
		dev, found, err := specDevice(&vv, p, tok)
		if !found {
			t.Fatal("a spec that exists was not found")
		}
		if err == nil {
			if _, ok := p.Device(dev); !ok {
				t.Fatalf("device %q is not the pool's", dev)
			}
		}
	})
}
