package dra

import (
	"errors"
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/pool"
	"github.com/railyard-io/railyard/internal/topology"
)

// ErrBothDeliveries is returned when one device would be handed out both
// by the device plugin and through DRA.
var ErrBothDeliveries = errors.New("devices served by both the device plugin and DRA")

// CheckExclusive checks, on a node's topology, that no device a pool with
// delivery "dra" selects is also selected by a device plugin pool (a share
// of a PF counts as the PF). Configuration validation sees only one pool
// at a time; selectors overlap only on a given node. The error wraps
// ErrBothDeliveries and names every device and its two pools.
func CheckExclusive(t *topology.Topology, pools []v1alpha1.Pool) error {
	if t == nil {
		return errors.New("dra: no topology")
	}
	byDRA, byPlugin := map[string]string{}, map[string]string{}
	var order []string
	for _, p := range pools {
		sel, err := pool.Compile(p)
		if err != nil {
			return fmt.Errorf("pool %s: %w", p.Name, err)
		}
		into := byPlugin
		if p.Delivery == v1alpha1.DeliveryDRA {
			into = byDRA
		}
		for _, d := range sel.Select(t) {
			pci := d.ID
			if d.Kind == v1alpha1.KindShared {
				pci = d.PF
			}
			if _, seen := into[pci]; !seen {
				into[pci] = p.Name
				order = append(order, pci)
			}
		}
	}
	var both []string
	reported := map[string]bool{}
	for _, pci := range order {
		dra, inDRA := byDRA[pci]
		plugin, inPlugin := byPlugin[pci]
		if inDRA && inPlugin && !reported[pci] {
			reported[pci] = true
			both = append(both, fmt.Sprintf("%s (DRA pool %s, device plugin pool %s)", pci, dra, plugin))
		}
	}
	if len(both) > 0 {
		return fmt.Errorf("%w: %s", ErrBothDeliveries, strings.Join(both, "; "))
	}
	return nil
}
