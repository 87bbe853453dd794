package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// DCBReader reads a host netdev's DCB settings (netops.Linux on a node).
type DCBReader interface {
	DCB(ctx context.Context, netdev string) (netops.DCB, error)
}

// qosOf is what roceQoS read of one NIC, for the consistency check.
type qosOf struct {
	netdev string
	dcb    netops.DCB
	ecn    *sysfs.ECN
}

func (q qosOf) String() string {
	s := q.dcb.String()
	if q.ecn != nil {
		s += fmt.Sprintf(", ECN rp %s np %s", prios(q.ecn.RP), prios(q.ecn.NP))
	}
	return s
}

// prios spells a priority bitmap ("3,4", "none").
func prios(b uint8) string {
	var p []string
	for i := range 8 {
		if b&(1<<i) != 0 {
			p = append(p, fmt.Sprint(i))
		}
	}
	if len(p) == 0 {
		return "none"
	}
	return strings.Join(p, ",")
}

// mlnxQoS is the command that sets trust and PFC as the check wants them.
func mlnxQoS(netdev, trust string, pfc uint8) string {
	v := make([]string, 8)
	for i := range v {
		v[i] = fmt.Sprint(pfc >> i & 1)
	}
	return fmt.Sprintf("mlnx_qos -i %s --trust %s --pfc %s", netdev, trust, strings.Join(v, ","))
}

// roceQoS checks each RoCE NIC's lossless configuration: PFC on the
// priority RoCE uses, the trust mode, ECN's reaction and notification
// points on that priority; against the policy's qos where it has one.
// Then that the node's RoCE NICs agree; then, from the DCB settings it
// read, the roce-dscp checks (checks_dscp.go): which DSCP and priority
// RoCE traffic and CNPs get on each port.
func (n *node) roceQoS(ctx context.Context) []Check {
	var out []Check
	var read []qosOf
	for _, x := range n.topo.NICs {
		if x.LinkLayer != v1alpha1.LinkLayerEthernet || x.Netdev == "" {
			continue
		}
		c, q, ok := n.roceQoSOf(ctx, x.Netdev, n.policyPF(x))
		out = append(out, c)
		if ok {
			read = append(read, q)
		}
	}
	if len(read) >= 2 {
		out = append(out, roceQoSConsistent(read))
	}
	dcbs := make(map[string]netops.DCB, len(read))
	for _, q := range read {
		dcbs[q.netdev] = q.dcb
	}
	return append(out, n.roceDSCP(dcbs)...)
}

// roceQoSConsistent compares what roce-qos read of two or more NICs.
func roceQoSConsistent(read []qosOf) Check {
	c := Check{ID: "roce-qos-consistent", Status: OK, Summary: fmt.Sprintf("%d RoCE NICs alike: %s", len(read), read[0])}
	differ := false
	for _, q := range read {
		c.Read = append(c.Read, fmt.Sprintf("%s: %s", q.netdev, q))
		differ = differ || q.String() != read[0].String()
	}
	if differ {
		c.Status, c.Summary = Warn, "the node's RoCE NICs differ in trust, PFC or ECN: traffic of one rail is lossless and of another not, or lands on another priority"
		c.Fix = "give every RoCE NIC the same settings (a node policy's qos and railyard node apply, or mlnx_qos on each)"
	}
	return c
}

func (n *node) roceQoSOf(ctx context.Context, netdev string, pf *v1alpha1.PF) (Check, qosOf, bool) {
	c := Check{ID: "roce-qos", Subject: netdev, Status: OK}
	if n.opt.DCB == nil {
		c.Status, c.Summary = Skip, "no DCB netlink reader: PFC and trust not read"
		return c, qosOf{}, false
	}
	d, err := n.opt.DCB.DCB(ctx, netdev)
	if err != nil {
		c.Status, c.Summary = Skip, "cannot read DCB (PFC, trust): "+err.Error()
		if errors.Is(err, netops.ErrDCBNotSupported) {
			c.Summary = "the driver has no DCB: PFC and trust cannot be read (a lossy RoCE NIC or a VM's)"
		}
		return c, qosOf{}, false
	}
	q := qosOf{netdev: netdev, dcb: d}
	c.Read = append(c.Read, fmt.Sprintf("DCB netlink (RTM_GETDCB IEEE) of %s: %s (pfc_cap %d)", netdev, d, d.PFCCap))
	e, err := n.fs.RoCEECN(netdev)
	switch {
	case err == nil:
		q.ecn = &e
		c.Read = append(c.Read, fmt.Sprintf("sysfs class/net/%s/ecn/roce_{rp,np}/enable/*: rp on %s, np on %s; CNP DSCP %d priority %d", netdev, prios(e.RP), prios(e.NP), e.CNPDSCP, e.CNPPrio))
	case errors.Is(err, sysfs.ErrNotFound):
		c.Read = append(c.Read, fmt.Sprintf("sysfs class/net/%s/ecn: none (an upstream kernel's mlx5 has no ecn/ files; MLNX_OFED's does): ECN not checked", netdev))
	default:
		c.Read = append(c.Read, fmt.Sprintf("sysfs class/net/%s/ecn: %v: ECN not checked", netdev, err))
	}
	var problems []string
	fail := false
	if pf != nil && pf.QoS != nil {
		want := pf.QoS
		wantPFC := v1alpha1.Bits(want.PFC)
		if d.PFC != wantPFC {
			problems, fail = append(problems, fmt.Sprintf("PFC on %s, the policy wants %s", prios(d.PFC), prios(wantPFC))), true
		}
		if d.Trust() != want.Trust {
			problems, fail = append(problems, fmt.Sprintf("trust %s, the policy wants %s", d.Trust(), want.Trust)), true
		}
		if q.ecn != nil {
			for _, p := range want.ECN {
				if !q.ecn.On(p) {
					problems, fail = append(problems, fmt.Sprintf("ECN off on priority %d (rp %s, np %s), the policy wants it on", p, prios(q.ecn.RP), prios(q.ecn.NP))), true
				}
			}
		}
		if fail {
			c.Fix = "railyard node apply --policy FILE (sets PFC, trust and ECN from the policy's qos), or " + mlnxQoS(netdev, want.Trust, wantPFC)
		}
	} else {
		pfc := d.PFCPriorities()
		c.Read = append(c.Read, fmt.Sprintf("judged as the %s profile (doctor --profile): %s", n.profile.Name, map[bool]string{true: "lossless, PFC expected on RoCE's priority", false: "lossy, ECN expected instead of PFC"}[n.profile.Lossless]))
		switch {
		case len(pfc) == 0 && n.profile.Lossless:
			problems = append(problems, fmt.Sprintf("PFC is off on every priority: RoCE here is lossy, which a lossless fabric (the %s profile) does not expect", n.profile.Name))
			c.Fix = mlnxQoS(netdev, "dscp", 1<<3) + " and PFC on the same priority on the switch ports (NVIDIA's default RoCE priority is 3); on a fabric lossy by design keep ECN on every priority and say so: doctor --profile roce-lossy"
		case len(pfc) == 0 && q.ecn != nil && q.ecn.RP == 0 && q.ecn.NP == 0:
			problems = append(problems, fmt.Sprintf("PFC off, as the %s profile expects, and ECN off on every priority: a lossy fabric relies on ECN (DCQCN) to slow senders before the switch drops", n.profile.Name))
			c.Fix = fmt.Sprintf("write 1 to class/net/%s/ecn/roce_rp/enable/3 and roce_np/enable/3 in sysfs, for RoCE's priority (3 by default; or railyard node apply with a qos)", netdev)
		case d.Trust() == v1alpha1.TrustPCP && len(pfc) > 0 && !d.PFCOn(0):
			problems = append(problems, fmt.Sprintf("trust pcp with PFC on %s: untagged RoCE v2 traffic carries no PCP and is classified priority 0, without PFC", prios(d.PFC)))
			c.Fix = mlnxQoS(netdev, "dscp", d.PFC) + " (RoCE v2 is routed: classify by DSCP)"
		}
		if q.ecn != nil {
			for _, p := range pfc {
				if !q.ecn.On(p) {
					problems = append(problems, fmt.Sprintf("ECN off on PFC priority %d (rp %s, np %s): without DCQCN congestion is left to PFC pauses, which spread", p, prios(q.ecn.RP), prios(q.ecn.NP)))
					c.Fix = strings.TrimPrefix(c.Fix+"; ", "; ") + fmt.Sprintf("write 1 to class/net/%s/ecn/roce_rp/enable/%d and roce_np/enable/%d in sysfs (or railyard node apply with a qos)", netdev, p, p)
				}
			}
		}
	}
	slices.Sort(problems)
	switch {
	case len(problems) == 0:
		c.Summary = q.String()
	case fail:
		c.Status, c.Summary = Fail, strings.Join(problems, "; ")
	default:
		c.Status, c.Summary = Warn, strings.Join(problems, "; ")
	}
	return c, q, true
}
