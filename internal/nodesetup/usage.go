package nodesetup

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// UsageSource tells which of the given VFs (PCI addresses) are in use, and
// by whom ("pod default/trainer-0", "railyard-cni container 3f2a..."). A
// source that cannot answer (fully) returns an error with what it found;
// Apply then destroys no VF and leaves the VFs that existed before the run
// as they are (ErrUsageUnknown).
type UsageSource interface {
	Name() string
	Usage(ctx context.Context, vfs []string) (map[string][]string, error)
}

// SysfsUsage finds VFs whose netdev has left the host: a VF bound to a
// kernel network driver (not vfio-pci) whose net/ directory is empty in
// the host's sysfs had its netdev moved into another network namespace,
// which is what railyard-cni and sriov-cni do for a pod. It cannot name the
// pod.
type SysfsUsage struct{ FS sysfs.FS }

// Name implements UsageSource.
func (SysfsUsage) Name() string { return "sysfs (VF netdev outside the host namespace)" }

// Usage implements UsageSource. A VF whose driver or netdevs cannot be
// read is reported in the error: it may be in use.
func (s SysfsUsage) Usage(_ context.Context, vfs []string) (map[string][]string, error) {
	out := map[string][]string{}
	var errs []error
	for _, vf := range vfs {
		drv, err := s.FS.Driver(vf)
		if err != nil {
			errs = append(errs, fmt.Errorf("VF %s: reading its driver: %w", vf, err))
			continue
		}
		if drv == "" || drv == "vfio-pci" {
			continue
		}
		n, err := s.FS.Netdevs(vf)
		if err != nil {
			errs = append(errs, fmt.Errorf("VF %s: listing its netdevs: %w", vf, err))
			continue
		}
		if len(n) > 0 {
			continue
		}
		out[vf] = append(out[vf], fmt.Sprintf("its netdev is not in the host namespace (moved into a pod?) while bound to %s", drv))
	}
	return out, errors.Join(errs...)
}

// CNIStateUsage reads railyard-cni's attachment records
// (<Dir>/devices/*.json): every record names a device some container's
// network uses, until DEL removes it.
type CNIStateUsage struct{ Dir string }

// Name implements UsageSource.
func (CNIStateUsage) Name() string { return "railyard-cni state records" }

// Usage implements UsageSource.
func (c CNIStateUsage) Usage(_ context.Context, vfs []string) (map[string][]string, error) {
	// List returns the records it could decode with the errors of the
	// others: both are passed on.
	recs, err := state.Store{Dir: c.Dir}.List()
	if err != nil {
		err = fmt.Errorf("railyard-cni state in %s: %w", c.Dir, err)
	}
	out := map[string][]string{}
	for _, r := range recs {
		if r.PCI == "" || !slices.Contains(vfs, r.PCI) {
			continue
		}
		id := r.ContainerID
		if len(id) > 12 {
			id = id[:12]
		}
		out[r.PCI] = append(out[r.PCI], fmt.Sprintf("railyard-cni attachment of container %s (network %q, netns %s, record %s)",
			id, r.Network, r.Netns, filepath.Join(c.Dir, "devices", r.Key+".json")))
	}
	return out, err
}

// PodResourcesUsage asks kubelet which pods hold the VFs: device plugins
// (Railyard's, the SR-IOV network device plugin) use the VF's PCI address
// as device ID. It names the pods.
type PodResourcesUsage struct {
	Lister podlist.Lister
	Socket string // for messages
}

// Name implements UsageSource.
func (p PodResourcesUsage) Name() string { return "kubelet PodResources " + p.Socket }

// Usage implements UsageSource.
func (p PodResourcesUsage) Usage(ctx context.Context, vfs []string) (map[string][]string, error) {
	pods, err := p.Lister.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pod resources: %w", err)
	}
	out := map[string][]string{}
	for _, pod := range pods {
		for _, c := range pod.Containers {
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					addr, _, _ := strings.Cut(id, "-s") // a share "<pci>-s<k>" is its NIC's
					if !slices.Contains(vfs, addr) {
						continue
					}
					who := fmt.Sprintf("pod %s/%s (container %s, resource %s)", pod.Namespace, pod.Name, c.Name, d.Resource)
					if !slices.Contains(out[addr], who) {
						out[addr] = append(out[addr], who)
					}
				}
			}
		}
	}
	return out, nil
}
