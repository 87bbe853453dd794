package nodesetup

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// ECNOps turns ECN's reaction and notification points on or off per
// priority: netops.ECNSysfs on a node.
type ECNOps interface {
	SetECN(ctx context.Context, netdev, point string, prio int, on bool) error
}

var (
	_ netops.DCBOps = netops.Linux{}
	_ ECNOps        = netops.ECNSysfs{}
)

// applyQoS makes a RoCE PF's PFC priorities and trust mode (DCB netlink)
// and ECN (its ecn/ files) what the policy's qos says: only what differs
// is written, so a second run changes nothing, and a run that failed half
// way is finished by the next. ECN is turned on for the policy's
// priorities; the others are left as they are.
func (a *Applier) applyQoS(ctx context.Context, q *v1alpha1.QoS, addr string, res *Result) error {
	pf, err := a.readPF(addr)
	if err != nil {
		return err
	}
	if pf.linkLayer == v1alpha1.LinkLayerInfiniBand {
		return errors.New("qos (PFC, trust, ECN) is for RoCE: this PF is InfiniBand; nothing changed")
	}
	if pf.netdev == "" {
		return errors.New("the PF has no netdev to set PFC, trust and ECN on")
	}
	if a.DCB == nil || a.ECN == nil {
		return errors.New("qos needs DCB netlink and the ecn/ files, which this run was not given")
	}
	d, err := a.DCB.DCB(ctx, pf.netdev)
	if err != nil {
		return err
	}
	pfc := v1alpha1.Bits(q.PFC)
	if d.PFC != pfc || d.Trust() != q.Trust {
		ch := Change{PF: addr, VF: -1, What: "dcb", From: d.String(), To: netops.DCB{PFC: pfc, DSCP: trustMap(q.Trust)}.String()}
		if err := a.DCB.SetDCB(ctx, pf.netdev, pfc, q.Trust); err != nil {
			return fmt.Errorf("setting %s: %w", ch.To, err)
		}
		res.Changes = append(res.Changes, ch)
	}
	if len(q.ECN) == 0 {
		return nil
	}
	e, err := a.FS.RoCEECN(pf.netdev)
	if errors.Is(err, sysfs.ErrNotFound) {
		return fmt.Errorf("%s has no ecn/ files (MLNX_OFED's mlx5 has them, an upstream kernel's does not): ECN not set: %w", pf.netdev, err)
	}
	if err != nil {
		return err
	}
	prios := slices.Sorted(slices.Values(q.ECN))
	for _, pt := range []struct {
		name string
		bits uint8
	}{{netops.ECNReactionPoint, e.RP}, {netops.ECNNotificationPoint, e.NP}} {
		for _, p := range prios {
			if pt.bits&(1<<p) != 0 {
				continue
			}
			if err := a.ECN.SetECN(ctx, pf.netdev, pt.name, p, true); err != nil {
				return err
			}
			res.Changes = append(res.Changes, Change{PF: addr, VF: -1, What: fmt.Sprintf("ecn %s priority %d", pt.name, p), From: "off", To: "on"})
		}
	}
	return nil
}

// trustMap stands for a trust mode in a DCB value (for its String).
func trustMap(trust string) map[uint8]uint8 {
	if trust == v1alpha1.TrustDSCP {
		return netops.DefaultDSCPMap()
	}
	return nil
}
