package binding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestCrashAtEveryStep kills a bind (which also collects an ended pod's
// binding), a CNI DEL release and a Reconcile at each of their steps in
// turn, then checks what is on disk before retrying: the bindings are the
// old or the new ones (never a device twice), a spec never outlives its
// binding, and the retry (plus Reconcile, as after an agent restart)
// converges to the same state as a run without a crash.
func TestCrashAtEveryStep(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 2)
	g0, g1 := tp.GPUs[0], tp.GPUs[1]
	ctx := context.Background()
	type op struct {
		name string
		run  func(s *Store, toks map[string][]string) error
	}
	ops := []op{
		{"bind b (collecting a)", func(s *Store, toks map[string][]string) error {
			h := Holders{At: time.Unix(1e9+10, 0), Pods: map[string]PodRef{}}
			for _, name := range []string{"b", "c"} {
				for _, tk := range toks[name] {
					h.Pods[tk] = PodRef{Namespace: "ns", Name: name}
				}
			}
			_, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: "b"}, Sandbox: "sb-b", By: ByCNI, Holders: &h,
				Containers: []ContainerTokens{{Name: "c", Tokens: toks["b"], GPUs: []string{g1.PCI}}}})
			return err
		}},
		{"release c", func(s *Store, _ map[string][]string) error {
			_, err := s.ReleaseSandbox(ctx, PodRef{Namespace: "ns", Name: "c"}, "sb-c")
			return err
		}},
		{"reconcile", func(s *Store, _ map[string][]string) error { return s.Reconcile(ctx) }},
	}
	for _, o := range ops {
		var reference []Binding
		for k := 0; ; k++ { // k == 0: no crash, the reference run
			var steps []string
			crashed := ""
			vv := *v
			setup := newTestStore(t, &vv, Options{Now: func() time.Time { return time.Unix(1e9, 0) }})
			toks := map[string][]string{}
			taken := map[string]bool{}
			for _, name := range []string{"a", "b", "c"} {
				toks[name] = freeTokens(t, setup, &vv, g0.NUMA, 2, taken)
			}
			for _, name := range []string{"a", "c"} {
				if _, err := setup.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: name}, Sandbox: "sb-" + name, By: ByCNI,
					Containers: []ContainerTokens{{Name: "c", Tokens: toks[name], GPUs: []string{g0.PCI}}}}); err != nil {
					t.Fatal(err)
				}
			}
			s := NewStore(setup.Dir(), Options{Now: func() time.Time { return time.Unix(1e9+5, 0) }, Fault: func(step string) error {
				steps = append(steps, step)
				if len(steps) == k {
					crashed = step
					return errors.New("killed")
				}
				return nil
			}})
			err := o.run(s, toks)
			if k > 0 && crashed == "" {
				if err != nil {
					t.Fatalf("%s: %v", o.name, err)
				}
				if k == 1 {
					t.Fatalf("%s: no step to crash at", o.name)
				}
				t.Logf("%s: crashed at each of %d steps %v", o.name, k-1, steps)
				break
			}
			if k == 0 {
				if err != nil {
					t.Fatal(err)
				}
				reference, _ = setup.Bindings()
				continue
			}
			if err == nil {
				t.Fatalf("%s: crash at %s not reported", o.name, crashed)
			}
			// What a process finds after the crash.
			bs, err := setup.Bindings()
			if err != nil {
				t.Fatalf("%s, crash at step %d (%s): %v", o.name, k, crashed, err)
			}
			bound := map[string]bool{}
			for _, b := range bs {
				bound[b.Token] = true
			}
			for _, name := range []string{"a", "b", "c"} {
				for _, tk := range toks[name] {
					if _, err := readIfExists(CDISpecPath(vv.CDISpecDir, tk)); err == nil && !bound[tk] {
						t.Errorf("%s, crash at %s: spec of unbound %s", o.name, crashed, tk)
					}
				}
			}
			// The retry (runtime or kubelet), then an agent restart.
			retry := NewStore(setup.Dir(), Options{Now: func() time.Time { return time.Unix(1e9+5, 0) }})
			if err := o.run(retry, toks); err != nil {
				t.Fatalf("%s, crash at %s: retry: %v", o.name, crashed, err)
			}
			if err := retry.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ := setup.Bindings()
			if !slices.EqualFunc(got, reference, func(a, b Binding) bool { return a.Token == b.Token && a.Pod == b.Pod && a.Sandbox == b.Sandbox }) {
				t.Errorf("%s, crash at %s: after retry %v, without crash %v", o.name, crashed, tokensOf(got), tokensOf(reference))
			}
			for _, b := range got {
				if _, err := readIfExists(CDISpecPath(vv.CDISpecDir, b.Token)); err != nil {
					t.Errorf("%s, crash at %s: %s has no spec after retry", o.name, crashed, b.Token)
				}
			}
		}
	}
}

func tokensOf(bs []Binding) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Pod.Name+":"+b.Token)
	}
	return out
}

// TestConcurrentBindersNeverShareADevice: 8 binders, each its own Store
// (its own lock file descriptor, as separate processes have), bind 8 pods
// at once on a node with one VF per NIC: every token bound, no device
// twice.
func TestConcurrentBindersNeverShareADevice(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 1)
	s := newTestStore(t, v, Options{})
	taken := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, len(tp.GPUs))
	for i, g := range tp.GPUs {
		toks := freeTokens(t, s, v, g.NUMA, 1, taken)
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := NewStore(s.Dir(), Options{})
			_, err := own.Bind(context.Background(), Request{Pod: PodRef{Namespace: "ns", Name: fmt.Sprint("p", i)},
				Containers: []ContainerTokens{{Name: "c", Tokens: toks, GPUs: []string{g.PCI}}}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	bs, err := s.Bindings()
	if err != nil || len(bs) != len(tp.GPUs) {
		t.Fatalf("%d bindings, %v", len(bs), err)
	}
	for _, b := range bs {
		rail, _ := tp.Rail(b.GPUs[0])
		if d, _ := v.Pools[0].Device(b.Device); d.PF != rail.NIC {
			t.Errorf("%s: GPU %s got %s, not on its rail %s", b.Pod, b.GPUs[0], b.Device, rail.NIC)
		}
	}
}
