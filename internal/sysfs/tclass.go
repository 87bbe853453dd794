package sysfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// TrafficClass is what an RDMA port's tc/<port>/traffic_class says: the
// IP traffic class (the TOS byte) mlx5 gives the RoCE traffic of the
// port's queue pairs. The file is MLNX_OFED's (NVIDIA's out-of-tree mlx5_ib,
// drivers/infiniband/hw/mlx5/main_ext.c: traffic_class_show and
// traffic_class_store); an upstream kernel's mlx5 has no tc/ directory.
//
// The driver prints "Global tclass=<n>\n" when a global class is set (it
// then overrides every QP's own, tclass_get_tclass_locked), then one line
// per destination rule ("dst_ip=10.0.0.0/8,tclass=96\n"), which apply when
// no global class is set. With neither the file is empty: each QP keeps
// the traffic class its application gave it (NCCL_IB_TC, rdma_cm's ToS),
// 0 unless one was given.
type TrafficClass struct {
	// Global is the class set for the whole port, -1 for none.
	Global int
	// Rules are the per-destination classes, as the driver prints them.
	Rules []TrafficClassRule
}

// TrafficClassRule is one per-address line of traffic_class.
type TrafficClassRule struct {
	// Match is what the rule matches, as printed ("dst_ip=10.0.0.0/8",
	// "src_ip=10.0.0.1,dst_ip=10.0.1.0/24").
	Match string
	// TClass is the traffic class it gives (0-255).
	TClass int
}

// Set reports whether anything is set (a global class or a rule).
func (t TrafficClass) Set() bool { return t.Global >= 0 || len(t.Rules) > 0 }

// String spells the settings as the file does, on one line ("Global
// tclass=106", "dst_ip=10.0.0.0/8,tclass=96", "unset").
func (t TrafficClass) String() string {
	var p []string
	if t.Global >= 0 {
		p = append(p, fmt.Sprintf("Global tclass=%d", t.Global))
	}
	for _, r := range t.Rules {
		p = append(p, fmt.Sprintf("%s,tclass=%d", r.Match, r.TClass))
	}
	if len(p) == 0 {
		return "unset"
	}
	return strings.Join(p, "; ")
}

// TClassDSCP is the DSCP of traffic class (TOS byte) tclass: its upper six
// bits. mlx5 writes exactly that into the QP (tclass_update_qp:
// primary_address_path.dscp = tclass >> 2); the two ECN bits below are
// not taken from it.
func TClassDSCP(tclass int) int { return tclass >> 2 }

// rule field prefixes the driver prints before ",tclass=" (its parse_tree:
// tclass_print_src_ip, _dst_ip, _src_ip6, _dst_ip6).
var tclassMatchKeys = []string{"src_ip=", "dst_ip=", "src_ip6=", "dst_ip6="}

// ParseTrafficClass parses traffic_class's content (see TrafficClass). An
// empty file is no class set (Global -1).
func ParseTrafficClass(s string) (TrafficClass, error) {
	t := TrafficClass{Global: -1}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if v, ok := strings.CutPrefix(line, "Global tclass="); ok {
			if t.Global >= 0 {
				return TrafficClass{}, fmt.Errorf("traffic_class: a second Global line %s", Quote(line))
			}
			n, err := parseTClass(v)
			if err != nil {
				return TrafficClass{}, fmt.Errorf("traffic_class %s: %w", Quote(line), err)
			}
			t.Global = n
			continue
		}
		r, err := parseTClassRule(line)
		if err != nil {
			return TrafficClass{}, fmt.Errorf("traffic_class %s: %w", Quote(line), err)
		}
		t.Rules = append(t.Rules, r)
	}
	return t, nil
}

// parseTClassRule parses "<key>=<addr>,...,tclass=<n>".
func parseTClassRule(line string) (TrafficClassRule, error) {
	fields := strings.Split(line, ",")
	v, ok := strings.CutPrefix(fields[len(fields)-1], "tclass=")
	if !ok || len(fields) < 2 {
		return TrafficClassRule{}, errors.New(`want "Global tclass=<n>" or "<src_ip|dst_ip|src_ip6|dst_ip6>=<address>,...,tclass=<n>"`)
	}
	for _, f := range fields[:len(fields)-1] {
		known := false
		for _, k := range tclassMatchKeys {
			if strings.HasPrefix(f, k) && len(f) > len(k) {
				known = true
				break
			}
		}
		if !known {
			return TrafficClassRule{}, fmt.Errorf("unknown match %s", Quote(f))
		}
	}
	n, err := parseTClass(v)
	if err != nil {
		return TrafficClassRule{}, err
	}
	return TrafficClassRule{Match: Printable(Clip(strings.Join(fields[:len(fields)-1], ","), 128)), TClass: n}, nil
}

// parseTClass parses a class the driver accepted: 0 to 255 (its store
// rejects more than 0xff).
func parseTClass(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("tclass %s: %w", Quote(v), numError(err))
	}
	if n < 0 || n > 0xff {
		return 0, fmt.Errorf("tclass %d: want 0 to 255", n)
	}
	return n, nil
}

// RoCETrafficClass reads RDMA device rdma's tc/<port>/traffic_class
// (MLNX_OFED's mlx5). ErrNotFound when the device has none (an upstream
// kernel's mlx5, another driver); an error for a file that is not one
// (a FIFO, more than MaxAttrSize bytes) or does not parse.
func (f FS) RoCETrafficClass(rdma string, port int) (TrafficClass, error) {
	if !isEntryName(rdma) {
		return TrafficClass{}, fmt.Errorf("invalid RDMA device name %s", Quote(rdma))
	}
	if port < 1 {
		return TrafficClass{}, fmt.Errorf("RDMA port %d: ports count from 1", port)
	}
	rel := filepath.Join("class/infiniband", rdma, "tc", strconv.Itoa(port), "traffic_class")
	s, err := f.ReadString(rel)
	if err != nil {
		return TrafficClass{}, err
	}
	t, err := ParseTrafficClass(s)
	if err != nil {
		return TrafficClass{}, fmt.Errorf("%s: %w", rel, err)
	}
	return t, nil
}

// CNP is the DSCP and 802.1p priority of the congestion notification
// packets a RoCE netdev's notification point sends.
type CNP struct {
	DSCP, Prio int
}

// RoCECNP reads a netdev's ecn/roce_np/cnp_dscp and cnp_802p_prio: each
// "%d\n" (MLNX_OFED's mlx5 and Oracle's UEK, drivers/net/ethernet/
// mellanox/mlx5/core/en_ecn.c: mlx5e_show_cnp_dscp and
// mlx5e_show_cnp_802p_prio). ErrNotFound when a file is missing (an
// upstream kernel's mlx5 keeps them in debugfs instead,
// mlx5/<pci>/cc_params/np_cnp_dscp and np_cnp_prio); an error for a DSCP
// beyond 0-63 or a priority beyond 0-7, which no mlx5 field holds.
func (f FS) RoCECNP(netdev string) (CNP, error) {
	if err := validIfName(netdev); err != nil {
		return CNP{}, err
	}
	dir := filepath.Join("class/net", netdev, "ecn/roce_np")
	var c CNP
	for _, a := range []struct {
		name string
		v    *int
		max  int
	}{{"cnp_dscp", &c.DSCP, 63}, {"cnp_802p_prio", &c.Prio, 7}} {
		rel := filepath.Join(dir, a.name)
		v, err := f.ReadInt(rel)
		if err != nil {
			return CNP{}, err
		}
		if v < 0 || v > a.max {
			return CNP{}, fmt.Errorf("%s: %d: want 0 to %d", rel, v, a.max)
		}
		*a.v = v
	}
	return c, nil
}
