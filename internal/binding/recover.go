package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// maxSpecBytes bounds a per-token CDI spec read back (about 1 KiB).
const maxSpecBytes = 1 << 20

// ErrPoolRefused is returned (wrapped) for a token of a pool the agent
// refused: a token kubelet holds lost its binding and its device could not
// be found again, so any free-looking device may be in use.
var ErrPoolRefused = errors.New("binding: pool refused")

// Recovery is what Recover did.
type Recovery struct {
	// Bindings are the bindings rebuilt from CDI specs.
	Bindings []Binding
	// Unknown maps a pool's resource to its held tokens that have a CDI
	// spec but no binding, and whose device the spec does not name
	// unambiguously: their specs must be kept (Reconcile's keep) and the
	// pool refuse binds (Pool.Refused) while kubelet holds them.
	Unknown map[string][]string
}

// Tokens returns the tokens of every pool in Unknown.
func (r Recovery) Tokens() []string {
	var out []string
	for _, ts := range r.Unknown {
		out = append(out, ts...)
	}
	slices.Sort(out)
	return out
}

// Recover rebuilds the bindings of tokens kubelet holds (pods, listed at
// h) that have no binding but a CDI spec: bindings.json was lost (removed,
// or a state directory that did not survive) while their containers run
// with the devices the specs name. Reconcile used to remove those specs as
// strays, and the next pod was bound to a device a running container
// used. A spec's device is its verbs node; a token whose spec cannot be
// read, names no verbs node of its pool, or one already bound, is reported
// in Recovery.Unknown and never rebound. A token without a spec was never
// given to a container and is left to the next bind.
func (s *Store) Recover(ctx context.Context, pods []podlist.Pod, h Holders) (Recovery, error) {
	var rec Recovery
	unlock, err := s.lock(ctx)
	if err != nil {
		return rec, err
	}
	defer unlock()
	v, err := s.View()
	if err != nil || v.CDISpecDir == "" {
		return rec, err
	}
	cur, err := s.Bindings()
	if err != nil {
		return rec, err
	}
	bound := make(map[string]bool, len(cur))
	used := make(map[string]bool, len(cur))
	for _, b := range cur {
		bound[b.Token], used[b.Device] = true, true
	}
	held := make([]string, 0, len(h.Pods))
	for t := range h.Pods {
		held = append(held, t)
	}
	slices.Sort(held)
	wall, boot := s.Now()
	var bootAt *BootTime
	if boot.ID != "" {
		bootAt = &boot
	}
	for _, tok := range held {
		id, err := ParseToken(tok)
		if bound[tok] || err != nil {
			continue
		}
		p, ok := v.Pool(id.Tag)
		if !ok {
			continue
		}
		dev, found, err := specDevice(v, p, tok)
		if !found {
			continue
		}
		if err == nil && used[dev] {
			err = fmt.Errorf("device %s is bound to another token", dev)
		}
		if err != nil {
			if rec.Unknown == nil {
				rec.Unknown = map[string][]string{}
			}
			rec.Unknown[p.Resource] = append(rec.Unknown[p.Resource], tok)
			continue
		}
		b := Binding{Resource: p.Resource, Token: tok, Device: dev, Pod: h.Pods[tok], By: ByAgent, At: wall, Boot: bootAt}
		if req, ok := TokensRequest(pods, v, []string{tok}); ok {
			var podGPUs []string
			for _, c := range req.Containers {
				podGPUs = append(podGPUs, c.GPUs...)
			}
			for _, c := range req.Containers {
				if slices.Contains(c.Tokens, tok) {
					b.Container, b.GPUs = c.Name, c.GPUs
					if len(b.GPUs) == 0 {
						b.GPUs = podGPUs
					}
				}
			}
			b.Class = bestClass(s.topology(v), b.GPUs, p, dev)
		}
		used[dev] = true
		rec.Bindings = append(rec.Bindings, b)
	}
	if len(rec.Bindings) == 0 {
		return rec, nil
	}
	next := append(slices.Clone(cur), rec.Bindings...)
	if err := checkBindings(next); err != nil {
		return Recovery{Unknown: rec.Unknown}, err
	}
	if err := s.writeBindings(next); err != nil {
		return Recovery{Unknown: rec.Unknown}, err
	}
	return rec, nil
}

// specDevice reads the device of token tok from its CDI spec: the pool's
// device whose verbs node the spec gives. found is false without a spec.
func specDevice(v *View, p *Pool, tok string) (dev string, found bool, err error) {
	raw, err := inputfile.Read(CDISpecPath(v.CDISpecDir, tok), maxSpecBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", true, err
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return "", true, fmt.Errorf("CDI spec of %s: %w", tok, err)
	}
	var verbs []string
	for _, d := range spec.Devices {
		if d.Name != tok {
			continue
		}
		for _, n := range d.ContainerEdits.DeviceNodes {
			if n != nil && path.Dir(n.Path) == containerdev.Dir && containerdev.Kind(path.Base(n.Path)) == "uverbs" {
				verbs = append(verbs, path.Base(n.Path))
			}
		}
	}
	if len(verbs) != 1 {
		return "", true, fmt.Errorf("CDI spec of %s gives %d verbs nodes, want 1", tok, len(verbs))
	}
	for _, d := range p.Devices {
		if d.Uverbs == verbs[0] {
			return d.ID, true, nil
		}
	}
	return "", true, fmt.Errorf("no device of pool %s has verbs node %s (from the CDI spec of %s)", p.Resource, verbs[0], tok)
}
