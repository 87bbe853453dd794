package netopstest

import (
	"context"
	"fmt"
	"maps"

	"github.com/railyard-io/railyard/internal/netops"
)

var _ netops.DCBOps = (*Fake)(nil)

// SetDCBOf makes host netdev name a DCB-capable NIC with settings d (the
// link must exist: AddLink). Links without it answer as a veth does:
// ErrDCBNotSupported.
func (f *Fake) SetDCBOf(name string, d netops.DCB) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dcb == nil {
		f.dcb = map[string]netops.DCB{}
	}
	d.DSCP = maps.Clone(d.DSCP)
	f.dcb[name] = d
}

// DCB implements netops.DCBOps as the kernel answers RTM_GETDCB: an
// unknown netdev is ErrLinkNotFound (ENODEV), one whose driver has no DCB
// operations ErrDCBNotSupported (EOPNOTSUPP).
func (f *Fake) DCB(_ context.Context, netdev string) (netops.DCB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "DCB %s", netdev)
	if err := netops.ValidIfName(netdev); err != nil {
		return netops.DCB{}, err
	}
	l := f.lookup(netops.Host, netdev)
	if l == nil || l.Name != netdev {
		return netops.DCB{}, fmt.Errorf("DCB of %s: %w", netdev, netops.ErrLinkNotFound)
	}
	d, ok := f.dcb[netdev]
	if !ok {
		return netops.DCB{}, fmt.Errorf("DCB of %s: %w", netdev, netops.ErrDCBNotSupported)
	}
	d.DSCP = maps.Clone(d.DSCP)
	return d, nil
}

// SetDCB implements netops.DCBOps: a mutating call (FailAtMutation fails
// it with no effect). Trust dscp gives the netdev the default DSCP map
// when it has none, trust pcp removes it, as the kernel's mlx5 does.
func (f *Fake) SetDCB(_ context.Context, netdev string, pfc uint8, trust string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "SetDCB %s pfc %#02x trust %s", netdev, pfc, trust); err != nil {
		return err
	}
	if err := netops.ValidIfName(netdev); err != nil {
		return err
	}
	if trust != "dscp" && trust != "pcp" {
		return fmt.Errorf("trust %q: want dscp or pcp", trust)
	}
	l := f.lookup(netops.Host, netdev)
	if l == nil || l.Name != netdev {
		return fmt.Errorf("DCB of %s: %w", netdev, netops.ErrLinkNotFound)
	}
	d, ok := f.dcb[netdev]
	if !ok {
		return fmt.Errorf("DCB of %s: %w", netdev, netops.ErrDCBNotSupported)
	}
	d.PFC = pfc
	switch {
	case trust == "dscp" && len(d.DSCP) == 0:
		d.DSCP = netops.DefaultDSCPMap()
	case trust == "pcp":
		d.DSCP = nil
	}
	f.dcb[netdev] = d
	return nil
}
