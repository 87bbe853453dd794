package agent

import (
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// Reasons of railyard_warnings_total.
const (
	warningPoolEmpty    = "pool_empty"
	warningPoolsOverlap = "pools_overlap"
)

// emptyState is whether a pool matched devices at the last discovery.
type emptyState int

const (
	emptyUnknown emptyState = iota // no discovery yet
	emptyYes
	emptyNo
)

// noteEmpty sets railyard_pool_empty and logs a warning when a pool's
// selectors stop matching any device (including at start-up), and an info
// line when it matches devices again. Called with a.mu held.
func (a *Agent) noteEmpty(pp *poolPlugin, topo *topology.Topology, empty bool) {
	a.metrics.SetPoolEmpty(pp.cfg.Name, empty)
	was := pp.emptyState
	if !empty {
		pp.emptyState = emptyNo
		if was == emptyYes {
			a.log.Info("pool matches devices again", "resource", pp.cfg.Name, "devices", len(pp.plugin.Devices()))
		}
		return
	}
	pp.emptyState = emptyYes
	if was == emptyYes {
		return
	}
	a.metrics.Warning(warningPoolEmpty)
	args := []any{"resource", pp.cfg.Name, "deviceKind", pp.cfg.DeviceKind, "selectors", selectorString(pp.cfg.Selectors),
		"nics", len(topo.NICs)}
	if hint := otherKindHint(pp.cfg, topo); hint != "" {
		args = append(args, "hint", hint)
	}
	a.log.Warn("pool matches no device: it advertises nothing and pods requesting it stay Pending", args...)
}

// otherKindHint says whether the same selectors would match devices of
// another kind: the usual mistake after migrating from the SR-IOV network
// device plugin, which hands out a PF's VFs when it has VFs and the PF
// itself otherwise, where Railyard serves one kind per pool. A vf pool is
// tried as pf; a pf or shared pool (both hand out whole PFs) as vf.
func otherKindHint(p v1alpha1.Pool, topo *topology.Topology) string {
	other := v1alpha1.KindVF
	if p.DeviceKind == v1alpha1.KindVF {
		other = v1alpha1.KindPF
	}
	p.DeviceKind = other
	sel, err := pool.Compile(p)
	if err != nil {
		return ""
	}
	n := len(sel.Select(topo))
	switch {
	case n == 0:
		return ""
	case other == v1alpha1.KindPF:
		return fmt.Sprintf("the selectors match %d PF(s) that have no matching VFs: create VFs, or set deviceKind: pf (or shared) to hand out the PFs whole", n)
	default:
		return fmt.Sprintf("the selectors match %d VF(s): set deviceKind: vf to hand out VFs", n)
	}
}

// selectorString renders the selectors that are set, for a log line:
// "pfNames=[ens1f0] rdmaCapable=true" ("none" when all are empty).
func selectorString(s v1alpha1.Selectors) string {
	var parts []string
	add := func(name string, list []string) {
		if len(list) > 0 {
			parts = append(parts, name+"=["+strings.Join(list, ",")+"]")
		}
	}
	add("vendors", s.Vendors)
	add("devices", s.Devices)
	add("drivers", s.Drivers)
	add("pfNames", s.PFNames)
	add("pciAddresses", s.PCIAddresses)
	add("linkLayers", s.LinkLayers)
	if s.RDMACapable != nil {
		parts = append(parts, fmt.Sprintf("rdmaCapable=%t", *s.RDMACapable))
	}
	if len(s.NUMANodes) > 0 {
		parts = append(parts, fmt.Sprintf("numaNodes=%v", s.NUMANodes))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}
