package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/topology"
)

// world is the property test's node: a kubelet model (which pod holds
// which GPUs and tokens, as PodResources lists them), the store, and a
// crash switch that kills the next change at its k-th step.
type world struct {
	t     *testing.T
	rng   *rand.Rand
	v     *View
	tp    *topology.Topology
	dir   string
	clock time.Time
	crash int // the step at which the next change dies (0: none)
	steps int
	pods  map[string]*kpod // live pods by name
	gone  map[string]bool  // deleted pods not yet known released
	lis   *fakeLister
	ops   map[string]int // counts, for the log
}

type kpod struct {
	name    string
	gpus    []string
	tokens  []string
	sandbox string // "" when no CNI runs for the pod
	bound   bool
	// clean: when this pod was bound, no ended pod still held a binding (a
	// pod without a network is released by GC only) and every bound pod
	// was clean, so every GPU's rail had a free VF.
	clean bool
}

func (w *world) store() *Store {
	// A new Store each time: every change runs as if in a new process.
	return NewStore(w.dir, Options{Now: func() time.Time { return w.clock }, Fault: func(step string) error {
		w.steps++
		if w.crash > 0 && w.steps == w.crash {
			w.crash = 0
			w.ops["crash "+step]++
			return errors.New("process killed")
		}
		return nil
	}})
}

func (w *world) publishList() {
	var prs []podlist.Pod
	for _, p := range w.pods {
		prs = append(prs, podRes("ns", p.name, p.gpus, p.tokens))
	}
	w.lis.set(prs...)
}

// retry runs a change until it succeeds, each attempt possibly killed at
// a random step, as the runtime retries a failed ADD and kubelet a failed
// container start; sometimes the agent restarts in between (Reconcile).
func (w *world) retry(what string, f func(*Store) error) {
	for attempt := 0; ; attempt++ {
		w.steps = 0
		if attempt < 3 && w.rng.IntN(3) == 0 {
			w.crash = 1 + w.rng.IntN(10)
		}
		err := f(w.store())
		w.crash = 0
		if err == nil {
			return
		}
		if attempt > 20 {
			w.t.Fatalf("%s: still failing after %d attempts: %v", what, attempt, err)
		}
		if w.rng.IntN(2) == 0 {
			w.steps = 0
			if err := w.store().Reconcile(context.Background()); err != nil {
				w.t.Fatalf("reconcile after crash: %v", err)
			}
		}
	}
}

// admit plays kubelet admitting a pod: random free GPUs, and per GPU one
// healthy token it does not hold, on the GPU's NUMA node when one is
// free there (Topology Manager), else anywhere.
func (w *world) admit(name string) bool {
	held := map[string]bool{}
	usedGPU := map[string]bool{}
	for _, p := range w.pods {
		for _, tk := range p.tokens {
			held[tk] = true
		}
		for _, g := range p.gpus {
			usedGPU[g] = true
		}
	}
	var freeGPUs []topology.GPU
	for _, g := range w.tp.GPUs {
		if !usedGPU[g.PCI] {
			freeGPUs = append(freeGPUs, g)
		}
	}
	if len(freeGPUs) == 0 {
		return false
	}
	w.rng.Shuffle(len(freeGPUs), func(i, j int) { freeGPUs[i], freeGPUs[j] = freeGPUs[j], freeGPUs[i] })
	n := 1 + w.rng.IntN(min(4, len(freeGPUs)))
	bs, err := w.store().Bindings()
	if err != nil {
		w.t.Fatal(err)
	}
	ts := Tokens(&w.v.Pools[0], bs, held)
	w.checkCapacity(ts, bs, held)
	p := &kpod{name: name}
	for _, g := range freeGPUs[:n] {
		pick := ""
		for _, x := range ts {
			if x.Healthy && !held[x.ID] && x.NUMA == g.NUMA {
				pick = x.ID
				break
			}
		}
		if pick == "" {
			for _, x := range ts {
				if x.Healthy && !held[x.ID] {
					pick = x.ID
					break
				}
			}
		}
		if pick == "" {
			return false
		}
		held[pick] = true
		p.gpus = append(p.gpus, g.PCI)
		p.tokens = append(p.tokens, pick)
	}
	slices.Sort(p.gpus)
	if w.rng.IntN(2) == 0 {
		p.sandbox = "sb-" + name
	}
	w.pods[name] = p
	w.publishList()
	return true
}

// bindPod binds a pod the way its first binder would: railyard-cni ADD
// for a pod with a network, PreStartContainer (the agent) otherwise; and
// sometimes the other one too, which must change nothing.
func (w *world) bindPod(p *kpod) {
	ctx := context.Background()
	pod := PodRef{Namespace: "ns", Name: p.name, UID: "uid-" + p.name}
	cni := func(s *Store) error {
		_, err := (&Binder{Store: s, Lister: w.lis}).BindPod(ctx, pod, p.sandbox, ByCNI)
		return err
	}
	agent := func(s *Store) error {
		_, err := (&Binder{Store: s, Lister: w.lis}).BindTokens(ctx, p.tokens, ByAgent)
		return err
	}
	p.clean = true
	if bs, err := w.store().Bindings(); err == nil {
		for _, b := range bs {
			if o, live := w.pods[b.Pod.Name]; !live || (o.bound && !o.clean) {
				p.clean = false // an ended pod's device, or one placed around it
			}
		}
	}
	if p.sandbox != "" {
		w.retry("cni bind "+p.name, cni)
		w.ops["bind cni"]++
	}
	w.retry("agent bind "+p.name, agent)
	w.ops["bind agent"]++
	p.bound = true
}

func (w *world) check(what string) {
	t := w.t
	s := w.store()
	bs, err := s.Bindings()
	if err != nil {
		t.Fatalf("after %s: %v", what, err)
	}
	byToken := map[string]Binding{}
	for _, b := range bs {
		byToken[b.Token] = b
	}
	ix := 0
	for _, p := range w.pods {
		if !p.bound {
			continue
		}
		devs := map[string]bool{}
		for _, tk := range p.tokens {
			b, ok := byToken[tk]
			if !ok || b.Pod.Name != p.name {
				t.Fatalf("after %s: pod %s token %s resolves to %+v (%v)", what, p.name, tk, b, ok)
			}
			devs[b.Device] = true
			var spec cdispec.Spec
			raw, err := os.ReadFile(CDISpecPath(w.v.CDISpecDir, tk))
			if err != nil || json.Unmarshal(raw, &spec) != nil {
				t.Fatalf("after %s: pod %s token %s has no spec: %v", what, p.name, tk, err)
			}
			d, _ := w.v.Pools[0].Device(b.Device)
			if n := spec.Devices[0].ContainerEdits.DeviceNodes; len(n) == 0 || n[0].Path != "/dev/infiniband/"+d.Uverbs {
				t.Fatalf("after %s: spec of %s gives %+v, want %s's %s", what, tk, n, b.Device, d.Uverbs)
			}
			ix++
		}
		if len(devs) != len(p.tokens) {
			t.Fatalf("after %s: pod %s has %d tokens on %d devices", what, p.name, len(p.tokens), len(devs))
		}
	}
}

// quality: every GPU of a pod bound while no ended pod held a binding
// has one of its pod's devices at its rail's class (each NIC here has a VF
// for each GPU railed to it).
func (w *world) quality() {
	bs, _ := w.store().Bindings()
	for _, p := range w.pods {
		if !p.bound || !p.clean {
			continue
		}
		w.ops["quality checked"]++
		for _, g := range p.gpus {
			rail, _ := w.tp.Rail(g)
			best := topology.ClassUnknown
			for _, b := range bs {
				if b.Pod.Name != p.name {
					continue
				}
				d, _ := w.v.Pools[0].Device(b.Device)
				if c := w.tp.Class(g, d.PF); best == topology.ClassUnknown || c < best {
					best = c
				}
			}
			if best != rail.Class {
				for _, b := range bs {
					{
						d, _ := w.v.Pools[0].Device(b.Device)
						w.t.Logf("%s %s -> %s (PF %s numa %d) gpus %v", b.Pod.Name, b.Token, b.Device, d.PF, d.NUMA, b.GPUs)
					}
				}
				for _, d := range w.v.Pools[0].Devices {
					w.t.Logf("dev %s pf %s numa %d", d.ID, d.PF, d.NUMA)
				}
				for _, gg := range w.tp.GPUs {
					r, _ := w.tp.Rail(gg.PCI)
					w.t.Logf("gpu %s numa %d rail %s %s", gg.PCI, gg.NUMA, r.NIC, r.Class)
				}
				w.t.Fatalf("pod %s GPU %s: best device class %s, its rail is %s (%s)", p.name, g, best, rail.Class, rail.NIC)
			}
		}
	}
}

// TestPropertyRandomChurnWithCrashes: random pods (1-4 GPUs, one token
// per GPU, tokens taken as kubelet would), bound by railyard-cni or by the
// agent, deleted and released by CNI DEL or GC, in random order, with a
// process killed at a random step of about a third of all changes and the
// change retried. After every step: no device bound twice (the store's
// own invariant check), every token of every live pod resolves to a
// distinct device with a CDI spec giving that device; after every GC, no
// deleted pod keeps a binding. Every GPU of a pod bound while no ended pod
// held a device gets a device at its rail's class. Runs on five machine
// models with VFs.
func TestPropertyRandomChurnWithCrashes(t *testing.T) {
	cases := []struct {
		machine string
		vfs     int
	}{{"dgx-h100", 2}, {"roce-8gpu-4nic", 2}, {"dgx-a100", 1}, {"dgx-1", 2}, {"azure-ndv5", 1}}
	seeds := 5
	if testing.Short() {
		seeds = 2
	}
	for _, c := range cases {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", c.machine, seed), func(t *testing.T) {
				v, tp := testView(t, c.machine, c.vfs)
				s := newTestStore(t, v, Options{})
				w := &world{t: t, rng: rand.New(rand.NewPCG(uint64(seed), 7)), v: v, tp: tp, dir: s.Dir(),
					clock: time.Unix(1e9, 0), pods: map[string]*kpod{}, gone: map[string]bool{}, lis: &fakeLister{}, ops: map[string]int{}}
				w.publishList()
				ctx := context.Background()
				next := 0
				for step := range 120 {
					w.clock = w.clock.Add(time.Second)
					switch r := w.rng.IntN(10); {
					case r < 5: // admit and bind
						name := fmt.Sprintf("p%d", next)
						next++
						if w.admit(name) {
							w.bindPod(w.pods[name])
						}
					case r < 8 && len(w.pods) > 0: // delete
						names := make([]string, 0, len(w.pods))
						for n := range w.pods {
							names = append(names, n)
						}
						slices.Sort(names)
						p := w.pods[names[w.rng.IntN(len(names))]]
						delete(w.pods, p.name)
						w.publishList()
						w.gone[p.name] = true
						if p.sandbox != "" && w.rng.IntN(4) > 0 {
							w.retry("cni del "+p.name, func(s *Store) error {
								_, err := s.ReleaseSandbox(ctx, PodRef{Namespace: "ns", Name: p.name, UID: "uid-" + p.name}, p.sandbox)
								return err
							})
							w.ops["del cni"]++
						}
					default: // GC against PodResources
						at := w.clock
						w.retry("gc", func(s *Store) error {
							_, err := s.ReleaseGone(ctx, HoldersFrom(w.lis.resp, v, at), time.Hour)
							return err
						})
						w.ops["gc"]++
						bs, _ := w.store().Bindings()
						for _, b := range bs {
							if w.gone[b.Pod.Name] {
								t.Fatalf("step %d: deleted pod %s keeps %s after GC", step, b.Pod.Name, b.Token)
							}
						}
						w.gone = map[string]bool{}
					}
					w.check(fmt.Sprintf("step %d", step))
					w.quality()
				}
				// Every pod ends: every binding is released.
				w.pods = map[string]*kpod{}
				w.publishList()
				w.clock = w.clock.Add(time.Second)
				w.retry("final gc", func(s *Store) error {
					_, err := s.ReleaseGone(ctx, HoldersFrom(w.lis.resp, v, w.clock), time.Hour)
					return err
				})
				if bs, _ := w.store().Bindings(); len(bs) != 0 {
					t.Fatalf("bindings left after every pod ended: %+v", bs)
				}
				if err := w.store().Reconcile(ctx); err != nil {
					t.Fatal(err)
				}
				if left, _ := os.ReadDir(v.CDISpecDir); len(left) != 0 {
					t.Fatalf("CDI specs left: %v", left)
				}
				t.Logf("%v", w.ops)
			})
		}
	}
}

// checkCapacity: what kubelet can still allocate (healthy unbound tokens
// it does not hold) plus what it holds unbound never exceeds the free
// devices, however cross-NUMA binds renumbered the tokens.
func (w *world) checkCapacity(ts []TokenState, bs []Binding, held map[string]bool) {
	w.t.Helper()
	bound := map[string]bool{}
	usedDev := map[string]bool{}
	for _, b := range bs {
		bound[b.Token], usedDev[b.Device] = true, true
	}
	free := 0
	for _, d := range w.v.Pools[0].Devices {
		if !usedDev[d.ID] {
			free++
		}
	}
	avail, heldUnbound := 0, 0
	for _, x := range ts {
		if x.Device == "" && x.Healthy && !held[x.ID] {
			avail++
		}
	}
	for t := range held {
		if !bound[t] {
			heldUnbound++
		}
	}
	if avail+heldUnbound > free {
		w.t.Fatalf("kubelet could allocate %d tokens and holds %d unbound, for %d free devices", avail, heldUnbound, free)
	}
}
