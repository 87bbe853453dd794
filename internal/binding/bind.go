package binding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/alloc"
	"github.com/railyard-io/railyard/internal/topology"
)

// Binders, as recorded in Binding.By.
const (
	ByCNI   = "cni"
	ByAgent = "agent"
)

// ErrUnknownToken is returned (wrapped) for a device ID that is not a token
// of a pool of the view.
var ErrUnknownToken = errors.New("binding: not a token of a sandbox-binding pool")

// ContainerTokens is one container of a pod as PodResources lists it: its
// tokens (of any sandbox-binding pool) and its GPUs' PCI addresses.
type ContainerTokens struct {
	Name   string
	Tokens []string
	GPUs   []string
}

// Request asks to bind every token of a pod.
type Request struct {
	// Pod is the pod; an empty name binds tokens that no listed container
	// holds (a non-restartable init container's), without GPUs.
	Pod PodRef
	// Sandbox is the CNI container ID when railyard-cni binds ("" else).
	Sandbox string
	// By is ByCNI or ByAgent.
	By         string
	Containers []ContainerTokens
	// Holders, when set, is the PodResources list the request was read
	// from: bindings whose token it shows held by another pod are released
	// in the same change (kubelet gave the token to someone else, so their
	// pod ended). A token held by no pod is not evidence enough: right after
	// a kubelet restart PodResources lists no pods for a moment; the agent's
	// GC releases those.
	Holders *Holders
}

// Result is what Bind did.
type Result struct {
	// Bindings are the bindings of every token of the request.
	Bindings []Binding
	// Bound counts the tokens bound by this call (0: all were bound).
	Bound int
	// Released are bindings of other pods whose tokens kubelet gave to this
	// pod: those pods are gone.
	Released []Binding
	// Collected are bindings of ended pods released by Request.Holders.
	Collected []Binding
	// Notes explain unusual choices (NUMA overflow), for logs.
	Notes []string
	// Took splits the call's time, for logs and the bind-time goal.
	Took Timing
}

// Timing is where a bind's time went.
type Timing struct {
	// List is kubelet's PodResources List (Binder only).
	List time.Duration
	// LockWait is the wait for the store's lock: other binds, releases
	// and GC of the node going first.
	LockWait time.Duration
	// Locked is the work under the lock: view, policy, the fsynced
	// commit, CDI specs and device-info files.
	Locked time.Duration
}

// Device returns the device bound to token in the result.
func (r Result) Device(token string) (string, bool) {
	for _, b := range r.Bindings {
		if b.Token == token {
			return b.Device, true
		}
	}
	return "", false
}

// Bind binds every token of the request that is not bound to this pod
// yet, all at once, with each pool's policy over the pool's free devices
// and the container's GPUs, then writes the CDI spec (and device-info
// file) of every token of the pod. It is idempotent: a pod whose tokens are
// bound gets the same devices, and its files are rewritten if missing.
func (s *Store) Bind(ctx context.Context, req Request) (Result, error) {
	began := time.Now()
	unlock, err := s.lock(ctx)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	locked := time.Now()
	v, err := s.View()
	if err != nil {
		return Result{}, err
	}
	cur, err := s.Bindings()
	if err != nil {
		return Result{}, err
	}
	var collected []Binding
	if req.Holders != nil {
		var live []Binding
		for _, b := range cur {
			if req.Holders.reassigned(b) && !requested(req, b.Token) {
				collected = append(collected, b)
			} else {
				live = append(live, b)
			}
		}
		cur = live
	}
	wall, boot := s.Now()
	next, res, err := plan(v, s.topology(v), cur, req, wall, boot)
	if err != nil {
		return Result{}, err
	}
	res.Collected = collected
	for _, b := range collected {
		if err := s.removeFiles(v, b); err != nil {
			return Result{}, err
		}
	}
	if len(collected) > 0 || res.Bound > 0 || len(res.Released) > 0 || !slices.EqualFunc(cur, next, sameBinding) {
		// Released tokens are all re-bound to this pod below: their files
		// are rewritten, not removed.
		if err := s.writeBindings(next); err != nil {
			return Result{}, err
		}
	}
	if err := s.writeFiles(v, next, res.Bindings); err != nil {
		return res, err
	}
	res.Took.LockWait, res.Took.Locked = locked.Sub(began), time.Since(locked)
	return res, nil
}

func requested(req Request, token string) bool {
	for _, c := range req.Containers {
		if slices.Contains(c.Tokens, token) {
			return true
		}
	}
	return false
}

func sameBinding(a, b Binding) bool {
	return a.Resource == b.Resource && a.Token == b.Token && a.Device == b.Device && a.Pod == b.Pod &&
		a.Container == b.Container && a.Sandbox == b.Sandbox
}

// plan is Bind without files: the bindings after the request, and what
// changed. It is pure.
func plan(v *View, topo *topology.Topology, cur []Binding, req Request, now time.Time, boot BootTime) ([]Binding, Result, error) {
	var bootAt *BootTime
	if boot.ID != "" {
		bootAt = &boot
	}
	var res Result
	if req.Pod.Name != "" && req.Pod.Namespace == "" {
		return nil, res, fmt.Errorf("binding: pod %q has no namespace", req.Pod.Name)
	}
	// Validate every token first: nothing changes on a bad request.
	type want struct {
		c    int // container index
		tok  TokenID
		pool *Pool
	}
	wants := map[string]want{}
	for ci, c := range req.Containers {
		for _, t := range c.Tokens {
			id, err := ParseToken(t)
			if err != nil {
				return nil, res, fmt.Errorf("%w: %w", ErrUnknownToken, err)
			}
			p, ok := v.Pool(id.Tag)
			if !ok {
				return nil, res, fmt.Errorf("%w: %s (no pool with tag %s on this node)", ErrUnknownToken, t, id.Tag)
			}
			if _, dup := wants[t]; dup {
				return nil, res, fmt.Errorf("binding: token %s listed twice", t)
			}
			wants[t] = want{c: ci, tok: id, pool: p}
		}
	}
	next := make([]Binding, 0, len(cur)+len(wants))
	used := make(map[string]bool, len(cur))
	bound := map[string]int{} // token -> index in next
	for _, b := range cur {
		w, asked := wants[b.Token]
		if asked && !b.Pod.Same(req.Pod) {
			// Kubelet gives a token to one container at a time: it now
			// belongs to this pod, so the pod that had it is gone.
			res.Released = append(res.Released, b)
			continue
		}
		if asked {
			if req.Sandbox != "" {
				b.Sandbox = req.Sandbox
			}
			if b.Pod.UID == "" {
				b.Pod.UID = req.Pod.UID
			}
			b.Container = req.Containers[w.c].Name
			bound[b.Token] = len(next)
		}
		next = append(next, b)
		used[b.Device] = true
	}
	var podGPUs []string
	for _, c := range req.Containers {
		podGPUs = append(podGPUs, c.GPUs...)
	}
	slices.Sort(podGPUs)
	podGPUs = slices.Compact(podGPUs)
	policies := map[string]alloc.Policy{}
	for ci, c := range req.Containers {
		gpus := c.GPUs
		if len(gpus) == 0 {
			gpus = podGPUs // a container with NICs and no GPUs serves the pod's
		}
		gpus = slices.Clone(gpus)
		slices.Sort(gpus)
		// The container's unbound tokens per pool, and what it already has.
		byPool := map[string][]TokenID{}
		must := map[string][]string{}
		for _, t := range c.Tokens {
			w := wants[t]
			if i, ok := bound[t]; ok {
				must[w.pool.Resource] = append(must[w.pool.Resource], next[i].Device)
				continue
			}
			byPool[w.pool.Resource] = append(byPool[w.pool.Resource], w.tok)
		}
		resources := make([]string, 0, len(byPool))
		for r := range byPool {
			resources = append(resources, r)
		}
		slices.Sort(resources)
		for _, r := range resources {
			p, _ := v.PoolByResource(r)
			if p.Refused != "" {
				// Tokens bound already keep their devices; no new one.
				return nil, res, fmt.Errorf("%w: %s: %s", ErrPoolRefused, r, p.Refused)
			}
			pol, ok := policies[r]
			if !ok {
				var err error
				if pol, err = alloc.ByName(p.Policy); err != nil {
					return nil, res, fmt.Errorf("binding: pool %s: %w", r, err)
				}
				policies[r] = pol
			}
			chosen, notes, err := choose(topo, p, pol, byPool[r], must[r], used, gpus)
			if err != nil {
				return nil, res, fmt.Errorf("binding: pool %s, pod %s container %s: %w", r, req.Pod, c.Name, err)
			}
			res.Notes = append(res.Notes, notes...)
			for _, ch := range chosen {
				b := Binding{
					Resource: r, Token: ch.token.String(), Device: ch.device, Pod: req.Pod,
					Container: req.Containers[ci].Name, Sandbox: req.Sandbox, By: req.By,
					GPUs: gpus, Class: bestClass(topo, gpus, p, ch.device), At: now, Boot: bootAt,
				}
				bound[b.Token] = len(next)
				next = append(next, b)
				used[ch.device] = true
				res.Bound++
			}
		}
	}
	for t := range wants {
		res.Bindings = append(res.Bindings, next[bound[t]])
	}
	slices.SortFunc(res.Bindings, func(a, b Binding) int {
		return cmp.Or(strings.Compare(a.Resource, b.Resource), strings.Compare(a.Token, b.Token))
	})
	if err := checkBindings(next); err != nil {
		return nil, res, err // a bug: never commit it
	}
	return next, res, nil
}

type choice struct {
	token  TokenID
	device string
}

// choose binds a container's unbound tokens of one pool. Tokens bind on
// their own NUMA node, near the GPUs of that node (all GPUs when it has
// none), keeping what Topology Manager aligned; but when some NUMA node
// has fewer tokens than GPUs (Topology Manager did not align the pod), as
// many tokens of nodes with more tokens than GPUs bind over every free
// device, near all the GPUs, as make up the difference; tokens of an
// unknown node do too. A NUMA node short of free devices (devices
// vanished) overflows to the others, with a note.
func choose(topo *topology.Topology, p *Pool, pol alloc.Policy, toks []TokenID, must []string, used map[string]bool, gpus []string) ([]choice, []string, error) {
	gpuNUMA := map[int][]string{}
	for _, g := range gpus {
		if gg, ok := topo.GPU(g); ok && gg.NUMA >= 0 {
			gpuNUMA[gg.NUMA] = append(gpuNUMA[gg.NUMA], g)
		}
	}
	const anyNUMA = -1
	var short []string // GPUs of NUMA nodes with fewer tokens than GPUs
	groups := map[int][]TokenID{}
	for _, t := range toks {
		groups[t.NUMA] = append(groups[t.NUMA], t) // -1 (unknown) is anyNUMA
	}
	if len(gpus) > 0 {
		// GPUs whose NUMA node has fewer tokens than GPUs need tokens from
		// elsewhere: Topology Manager did not align them (policy none, or
		// best-effort short of devices). Take them from nodes with more
		// tokens than GPUs, highest indices first; every other token stays
		// on its node.
		deficit := 0
		for n, gs := range gpuNUMA {
			if d := len(gs) - len(groups[n]); d > 0 {
				deficit += d
				short = append(short, gs...)
			}
		}
		slices.Sort(short)
		nodes := make([]int, 0, len(groups))
		for n := range groups {
			if n != anyNUMA {
				nodes = append(nodes, n)
			}
		}
		slices.Sort(nodes)
		for _, n := range nodes {
			g := groups[n]
			slices.SortFunc(g, func(a, b TokenID) int { return cmp.Compare(a.K, b.K) })
			move := min(deficit, max(0, len(g)-len(gpuNUMA[n])))
			if move == 0 {
				continue
			}
			groups[anyNUMA] = append(groups[anyNUMA], g[len(g)-move:]...)
			groups[n] = g[:len(g)-move]
			if len(groups[n]) == 0 {
				delete(groups, n)
			}
			deficit -= move
		}
	}
	keys := make([]int, 0, len(groups))
	for n := range groups {
		keys = append(keys, n)
	}
	// Aligned NUMA nodes first (ascending), the unaligned last.
	slices.SortFunc(keys, func(a, b int) int {
		if (a == anyNUMA) != (b == anyNUMA) {
			if a == anyNUMA {
				return 1
			}
			return -1
		}
		return cmp.Compare(a, b)
	})
	must = slices.Clone(must)
	var out []choice
	var notes []string
	for _, n := range keys {
		g := groups[n]
		slices.SortFunc(g, func(a, b TokenID) int { return cmp.Or(cmp.Compare(a.NUMA, b.NUMA), cmp.Compare(a.K, b.K)) })
		var free, local []string
		for _, d := range p.Devices {
			if used[d.ID] {
				continue
			}
			free = append(free, d.ID)
			if d.NUMA == n {
				local = append(local, d.ID)
			}
		}
		cand, serve := free, gpus
		if n != anyNUMA {
			// The GPUs of this node: the pod's other GPUs have tokens
			// of their own nodes (Topology Manager gave one per node).
			if len(gpuNUMA[n]) > 0 {
				serve = gpuNUMA[n]
			}
			cand = local
			if len(local) < len(g) {
				cand = free
				notes = append(notes, fmt.Sprintf("NUMA node %d has %d free devices for %d tokens: binding across NUMA nodes", n, len(local), len(g)))
			}
		}
		if len(cand) < len(g) {
			return nil, notes, fmt.Errorf("%d tokens to bind but %d free devices", len(g), len(cand))
		}
		req := alloc.Request{Topology: topo, Available: append(slices.Clone(cand), must...), MustInclude: must, Size: len(must) + len(g), GPUs: serve}
		if n == anyNUMA && len(short) > 0 && pol.Needs().PodGPUs {
			// Tokens made up for short nodes serve those nodes' GPUs that
			// have no device of their own yet, one device per GPU. The
			// policies count a GPU whose NIC already carries another GPU's
			// device as served and would spread the token to another
			// GPU's rail, so the devices the container has are left out.
			req = alloc.Request{Topology: topo, Available: slices.Clone(cand), Size: len(g), GPUs: unserved(topo, p, short, must)}
		}
		r, err := pol.Allocate(req)
		if err != nil {
			return nil, notes, fmt.Errorf("policy %s: %w", pol.Name(), err)
		}
		var fresh []string
		for _, d := range r.Devices {
			if !slices.Contains(req.MustInclude, d) {
				fresh = append(fresh, d)
			}
		}
		if len(fresh) != len(g) {
			return nil, notes, fmt.Errorf("policy %s chose %d new devices for %d tokens", pol.Name(), len(fresh), len(g))
		}
		for i, t := range g {
			if used[fresh[i]] {
				return nil, notes, fmt.Errorf("policy %s chose bound device %s", pol.Name(), fresh[i])
			}
			out = append(out, choice{token: t, device: fresh[i]})
			used[fresh[i]] = true
		}
		must = append(must, fresh...)
	}
	return out, notes, nil
}

// unserved returns the GPUs that get no device of devs at their rail's
// class, one device per GPU, in order (all of gpus when every one does).
func unserved(topo *topology.Topology, p *Pool, gpus, devs []string) []string {
	taken := map[string]bool{}
	var out []string
	for _, g := range gpus {
		rail, ok := topo.Rail(g)
		found := false
		for _, d := range devs {
			dv, known := p.Device(d)
			if taken[d] || !known || !ok {
				continue
			}
			if c := topo.Class(g, dv.PF); c != topology.ClassUnknown && c <= rail.Class {
				taken[d], found = true, true
				break
			}
		}
		if !found {
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return gpus
	}
	return out
}

// bestClass is the device's best class to the GPUs ("" without GPUs).
func bestClass(topo *topology.Topology, gpus []string, p *Pool, dev string) string {
	d, ok := p.Device(dev)
	if !ok || len(gpus) == 0 {
		return ""
	}
	best := topology.ClassUnknown
	for _, g := range gpus {
		if c := topo.Class(g, d.PF); c != topology.ClassUnknown && (best == topology.ClassUnknown || c < best) {
			best = c
		}
	}
	if best == topology.ClassUnknown {
		return ""
	}
	return best.String()
}
