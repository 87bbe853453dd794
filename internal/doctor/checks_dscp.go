package doctor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// The roce-dscp check: which DSCP, and so which priority, an mlx5 RoCE
// port gives its RoCE traffic and its CNPs. roce-qos reads the priorities
// with PFC and the trust mode; this check reads what lands on them.
//
// What it reads, and where the formats come from (kernel sources read):
//   - class/infiniband/<dev>/tc/<port>/traffic_class: MLNX_OFED's mlx5_ib
//     (drivers/infiniband/hw/mlx5/main_ext.c, traffic_class_show: "Global
//     tclass=%d\n" when set, then one line per destination rule, nothing
//     when unset; tclass_update_qp writes DSCP = tclass >> 2 into the QP).
//     Not in mainline Linux.
//   - class/net/<if>/ecn/roce_np/cnp_dscp and cnp_802p_prio: MLNX_OFED's
//     mlx5_core (en_sysfs.c creates them; en_ecn.c, also in Oracle's UEK,
//     prints "%d\n"). Not in mainline, whose mlx5_ib keeps the same
//     firmware fields in debugfs (drivers/infiniband/hw/mlx5/cong.c:
//     cc_params/np_cnp_dscp, np_cnp_prio, mode 0600), which is not read.
//   - The DSCP-to-priority map: the DCB APP table roce-qos read (mainline
//     en_dcbnl.c, mlx5e_dcbnl_dscp_app, lists all 64 DSCPs under trust
//     dscp); for a DSCP it lacks, mlx5's default map, DSCP >> 3.

// dscpRead is what roce-dscp read of one port, for the consistency check.
type dscpRead struct {
	subject string
	tc      sysfs.TrafficClass
	cnp     string
}

// String is what the ports must agree on: the DSCPs (not the ECN bits of
// the class, which mlx5 does not take) and the CNPs' settings.
func (d dscpRead) String() string {
	var data []string
	if d.tc.Global >= 0 {
		data = append(data, fmt.Sprintf("DSCP %d (global)", sysfs.TClassDSCP(d.tc.Global)))
	} else {
		data = append(data, "DSCP 0 (unset)")
		for _, r := range d.tc.Rules {
			data = append(data, fmt.Sprintf("DSCP %d for %s", sysfs.TClassDSCP(r.TClass), r.Match))
		}
	}
	return fmt.Sprintf("RoCE %s; CNPs %s", strings.Join(data, ", "), d.cnp)
}

// flow is one traffic class a port's RoCE traffic gets.
type flow struct {
	what   string
	tclass int
}

// flows lists the traffic classes a port's RoCE traffic gets: the global
// class when set (it overrides every QP's own), else each QP's own (0
// unless its application sets one) and each destination rule's.
func flows(t sysfs.TrafficClass) []flow {
	if t.Global >= 0 {
		return []flow{{fmt.Sprintf("tclass %d (global)", t.Global), t.Global}}
	}
	out := []flow{{"tclass unset, so each QP's own: 0 by default, unless the application sets one (NCCL_IB_TC, rdma_cm's ToS)", 0}}
	for _, r := range t.Rules {
		out = append(out, flow{fmt.Sprintf("tclass %d for %s", r.TClass, r.Match), r.TClass})
	}
	return out
}

// dscpPrio is the priority a port trusting DSCP gives DSCP dscp, and where
// that comes from: the APP table's entry, else mlx5's default map.
func dscpPrio(d netops.DCB, dscp int) (int, string) {
	if p, ok := d.DSCP[uint8(dscp)]; ok {
		return int(p), "the APP table"
	}
	return int(netops.DefaultDSCPPriority(uint8(dscp))), "not in the APP table: mlx5's default map, DSCP>>3"
}

// lossyDSCPFix is how to move traffic of DSCP dscp onto a PFC priority of
// pfc: mark it with a DSCP that maps there (26, NVIDIA's, when it does),
// or map its DSCP there.
func lossyDSCPFix(d netops.DCB, pfc uint8, netdev, tcFile string, dscp int) string {
	target := 0
	for pfc&(1<<target) == 0 {
		target++
	}
	want := -1
	if p, _ := dscpPrio(d, 26); p == target {
		want = 26
	}
	for v := 0; v < 64 && want < 0; v++ {
		if p, _ := dscpPrio(d, v); p == target {
			want = v
		}
	}
	var fix []string
	if want >= 0 {
		// The ECN bits 10 (ECT(0)) as NVIDIA's recipe writes them; mlx5
		// takes only the DSCP from the class.
		tclass := want<<2 | 2
		fix = append(fix, fmt.Sprintf("write %d to %s in sysfs (DSCP %d, priority %d), or have the applications set it (NCCL_IB_TC=%d)", tclass, tcFile, want, target, tclass))
	}
	if dscp != 0 {
		// Not DSCP 0: that would make every unmarked packet (TCP too)
		// lossless.
		fix = append(fix, fmt.Sprintf("map DSCP %d to priority %d: mlnx_qos -i %s --dscp2prio set,%d,%d", dscp, target, netdev, dscp, target))
	}
	if len(fix) == 0 {
		fix = append(fix, fmt.Sprintf("map a DSCP to priority %d (mlnx_qos -i %s --dscp2prio set,<dscp>,%d) and write that DSCP times 4 plus 2 to %s in sysfs", target, netdev, target, tcFile))
	}
	return strings.Join(fix, "; or ")
}

// roceDSCP checks every Ethernet port of the node's RoCE NICs against the
// DCB settings roce-qos read (by netdev; a netdev missing was not read),
// then that the ports agree.
func (n *node) roceDSCP(dcbs map[string]netops.DCB) []Check {
	var out []Check
	var read []dscpRead
	for _, x := range n.topo.NICs {
		if x.LinkLayer != v1alpha1.LinkLayerEthernet || x.Netdev == "" || x.RDMA == "" {
			continue
		}
		var dp *netops.DCB
		if d, ok := dcbs[x.Netdev]; ok {
			dp = &d
		}
		for _, p := range x.Ports {
			if p.LinkLayer != v1alpha1.LinkLayerEthernet {
				continue
			}
			c, r, ok := n.roceDSCPOf(x, p.Num, dp, n.policyPF(x))
			out = append(out, c)
			if ok {
				read = append(read, r)
			}
		}
	}
	if len(read) < 2 {
		return out
	}
	c := Check{ID: "roce-dscp-consistent", Status: OK, Summary: fmt.Sprintf("%d RoCE ports alike: %s", len(read), read[0])}
	differ := false
	for _, r := range read {
		c.Read = append(c.Read, fmt.Sprintf("%s: %s (traffic_class %s)", r.subject, r, r.tc))
		differ = differ || r.String() != read[0].String()
	}
	if differ {
		c.Status, c.Summary = Warn, "the node's RoCE ports mark RoCE traffic or CNPs differently: one rail's traffic or congestion notifications land on another DSCP (and switch queue) than another's"
		c.Fix = "give every RoCE port the same class/infiniband/<dev>/tc/<port>/traffic_class and every RoCE netdev the same ecn/roce_np/cnp_dscp and cnp_802p_prio (sysfs, MLNX_OFED)"
	}
	return append(out, c)
}

// roceDSCPOf checks one port: d is its netdev's DCB (nil: not read), pf
// the policy entry naming the NIC (nil: none). ok says the port's values
// were all read, for the consistency check.
func (n *node) roceDSCPOf(x topology.NIC, port int, d *netops.DCB, pf *v1alpha1.PF) (c Check, r dscpRead, ok bool) {
	c = Check{ID: "roce-dscp", Subject: fmt.Sprintf("%s/%d", x.RDMA, port), Status: OK}
	tcFile := fmt.Sprintf("class/infiniband/%s/tc/%d/traffic_class", x.RDMA, port)
	tc, err := n.fs.RoCETrafficClass(x.RDMA, port)
	switch {
	case errors.Is(err, sysfs.ErrNotFound):
		c.Read = append(c.Read, fmt.Sprintf("sysfs %s: none", tcFile))
		c.Status, c.Summary = Skip, "no tc/<port>/traffic_class (MLNX_OFED's mlx5 has one; an upstream kernel's mlx5 and other drivers do not): the DSCP of RoCE traffic is each application's (NCCL_IB_TC, rdma_cm's ToS) and cannot be read here"
		return c, r, false
	case err != nil:
		c.Read = append(c.Read, fmt.Sprintf("sysfs %s: %v", tcFile, err))
		c.Status, c.Summary = Skip, "cannot read the RoCE traffic class: "+err.Error()
		return c, r, false
	}
	r = dscpRead{subject: c.Subject, tc: tc}
	c.Read = append(c.Read, fmt.Sprintf("sysfs %s: %s", tcFile, tc))
	cnpFile := fmt.Sprintf("class/net/%s/ecn/roce_np/{cnp_dscp,cnp_802p_prio}", x.Netdev)
	cnp, cnpErr := n.fs.RoCECNP(x.Netdev)
	switch {
	case cnpErr == nil:
		r.cnp = fmt.Sprintf("DSCP %d, 802.1p priority %d", cnp.DSCP, cnp.Prio)
		c.Read = append(c.Read, fmt.Sprintf("sysfs %s: %d, %d", cnpFile, cnp.DSCP, cnp.Prio))
	case errors.Is(cnpErr, sysfs.ErrNotFound):
		r.cnp = "not exposed"
		c.Read = append(c.Read, fmt.Sprintf("sysfs %s: none (MLNX_OFED's mlx5 has them; an upstream kernel's keeps them in debugfs, mlx5/<pci>/cc_params/np_cnp_dscp and np_cnp_prio, root only, not read)", cnpFile))
	default:
		r.cnp = "unreadable"
		c.Read = append(c.Read, fmt.Sprintf("sysfs %s: %v", cnpFile, cnpErr))
	}
	ok = cnpErr == nil || errors.Is(cnpErr, sysfs.ErrNotFound)
	fl := flows(tc)
	if d == nil || d.Trust() != v1alpha1.TrustDSCP {
		var data []string
		for _, f := range fl {
			data = append(data, fmt.Sprintf("%s: DSCP %d", f.what, sysfs.TClassDSCP(f.tclass)))
		}
		why := "PFC and trust not read (roce-qos says why)"
		if n.opt.DCB == nil {
			why = "no DCB netlink reader: PFC and trust not read"
		}
		if d != nil {
			why = "trust pcp: the VLAN priority, not the DSCP, chooses the priority (roce-qos judges the trust mode)"
		}
		c.Status, c.Summary = Skip, fmt.Sprintf("%s; the priority is not judged. RoCE %s; CNPs %s", why, strings.Join(data, "; "), r.cnp)
		return c, r, ok
	}
	pfc, pfcFrom := d.PFC, "the NIC's PFC (on "+prios(d.PFC)+")"
	if pf != nil && pf.QoS != nil {
		pfc = v1alpha1.Bits(pf.QoS.PFC)
		pfcFrom = "the policy's qos (PFC on " + prios(pfc) + ")"
	}
	var data, problems []string
	for _, f := range fl {
		dscp := sysfs.TClassDSCP(f.tclass)
		prio, from := dscpPrio(*d, dscp)
		c.Read = append(c.Read, fmt.Sprintf("RoCE DSCP %d -> priority %d (%s)", dscp, prio, from))
		state := "PFC on"
		switch {
		case pfc == 0:
			state = "PFC off on every priority: lossy"
		case pfc&(1<<prio) == 0:
			state = "no PFC"
			problems = append(problems, fmt.Sprintf("RoCE traffic (%s) has DSCP %d and lands on priority %d, which has no PFC while %s is lossless: it is dropped under congestion, not paused", f.what, dscp, prio, pfcFrom))
			if c.Fix == "" {
				c.Fix = lossyDSCPFix(*d, pfc, x.Netdev, tcFile, dscp)
			}
		}
		data = append(data, fmt.Sprintf("%s: DSCP %d, priority %d (%s)", f.what, dscp, prio, state))
	}
	cnpSays := r.cnp
	if cnpErr == nil {
		prio, from := dscpPrio(*d, cnp.DSCP)
		c.Read = append(c.Read, fmt.Sprintf("CNP DSCP %d -> priority %d (%s)", cnp.DSCP, prio, from))
		cnpSays = fmt.Sprintf("DSCP %d (priority %d), 802.1p priority %d", cnp.DSCP, prio, cnp.Prio)
	}
	switch {
	case len(problems) > 0:
		c.Status, c.Summary = Fail, strings.Join(problems, "; ")
	case !ok:
		c.Status, c.Summary = Skip, fmt.Sprintf("CNP settings unreadable (%v); RoCE %s", cnpErr, strings.Join(data, "; "))
	default:
		c.Summary = fmt.Sprintf("RoCE %s; CNPs %s", strings.Join(data, "; "), cnpSays)
	}
	return c, r, ok
}
