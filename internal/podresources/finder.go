package podresources

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
)

// Finding is the answer of PodGPUs.
type Finding struct {
	// GPUs are the PCI addresses of the admitted container's GPUs; empty
	// when they are not known.
	GPUs []string
	// Container is "namespace/pod/container" of the container found.
	Container string
	// Note explains the answer (why no GPUs, unmapped IDs), for logs.
	Note string
}

// Finder guesses which container kubelet is admitting when it asks for a
// preferred allocation, and returns that container's GPUs.
//
// GetPreferredAllocation carries no pod identity. Kubelet allocates a
// container's resources one after the other (in map order) and records each
// in PodResources right away, so when the GPUs were allocated first, the
// admitted container is one that holds GPUs but no device of the resource
// being allocated. When several containers look like that, the ones already
// seen by an earlier call or Prime are set aside; if that does not leave
// exactly one, the answer is "unknown" and the caller falls back.
type Finder struct {
	lister       podlist.Lister
	resolver     GPUResolver
	gpuResources []string
	timeout      time.Duration

	mu    sync.Mutex
	known map[string]bool // containers seen holding GPUs without our devices
}

// NewFinder returns a Finder over lister; gpuResources are the resource
// names of GPUs ("nvidia.com/gpu"); resolver maps their IDs (nil: only
// PCI-address IDs resolve).
func NewFinder(lister podlist.Lister, resolver GPUResolver, gpuResources []string) *Finder {
	if resolver == nil {
		resolver = Map(nil)
	}
	return &Finder{lister: lister, resolver: resolver, gpuResources: slices.Clone(gpuResources),
		timeout: 2 * time.Second, known: map[string]bool{}}
}

type container struct {
	key     string
	gpuIDs  []string
	holders map[string]bool // resource names this container holds
}

func (f *Finder) list(ctx context.Context) ([]container, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	pods, err := f.lister.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pod resources: %w", err)
	}
	var out []container
	for _, p := range pods {
		for _, c := range p.Containers {
			ct := container{key: p.Namespace + "/" + p.Name + "/" + c.Name, holders: map[string]bool{}}
			for _, d := range c.Devices {
				if len(d.IDs) == 0 {
					continue
				}
				ct.holders[d.Resource] = true
				if slices.Contains(f.gpuResources, d.Resource) {
					ct.gpuIDs = append(ct.gpuIDs, d.IDs...)
				}
			}
			if len(ct.gpuIDs) > 0 {
				out = append(out, ct)
			}
		}
	}
	return out, nil
}

// Prime records the containers that currently hold GPUs but none of
// resources, so that a later PodGPUs can tell newly admitted ones from
// them. It replaces what was recorded before, so containers that are gone
// are forgotten (call it periodically).
func (f *Finder) Prime(ctx context.Context, resources []string) error {
	cs, err := f.list(ctx)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, c := range cs {
		for _, r := range resources {
			if !c.holders[r] {
				known[r+"|"+c.key] = true
			}
		}
	}
	f.mu.Lock()
	f.known = known
	f.mu.Unlock()
	return nil
}

// Known returns how many container/resource pairs are recorded as seen.
func (f *Finder) Known() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.known)
}

// PodGPUs returns the GPUs of the container being admitted for resource.
// An error means PodResources could not be read; an empty Finding.GPUs
// with a Note means the GPUs are not known.
func (f *Finder) PodGPUs(ctx context.Context, resource string) (Finding, error) {
	cs, err := f.list(ctx)
	if err != nil {
		return Finding{Note: "pod resources unavailable"}, err
	}
	var cands []container
	for _, c := range cs {
		if !c.holders[resource] {
			cands = append(cands, c)
		}
	}
	f.mu.Lock()
	var fresh []container
	for _, c := range cands {
		if !f.known[resource+"|"+c.key] {
			fresh = append(fresh, c)
		}
		f.known[resource+"|"+c.key] = true
	}
	f.mu.Unlock()
	var pick container
	switch {
	case len(cands) == 0:
		return Finding{Note: "no container holds GPUs without " + resource + " (GPUs not allocated yet?)"}, nil
	case len(cands) == 1:
		pick = cands[0]
	case len(fresh) == 1:
		pick = fresh[0]
	default:
		keys := make([]string, len(cands))
		for i, c := range cands {
			keys[i] = c.key
		}
		return Finding{Note: fmt.Sprintf("%d containers hold GPUs without %s, cannot tell which is admitted: %s",
			len(cands), resource, strings.Join(keys, ", "))}, nil
	}
	fd := Finding{Container: pick.key}
	var unmapped []string
	for _, id := range pick.gpuIDs {
		if pci, ok := f.resolver.PCIAddress(id); ok {
			fd.GPUs = append(fd.GPUs, pci)
		} else {
			unmapped = append(unmapped, id)
		}
	}
	slices.Sort(fd.GPUs)
	fd.GPUs = slices.Compact(fd.GPUs)
	if len(unmapped) > 0 {
		fd.Note = "no PCI address for GPU " + strings.Join(unmapped, ", ") + " (add it to the GPU map)"
	}
	return fd, nil
}
