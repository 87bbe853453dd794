package sysfs

import (
	"errors"
	"path/filepath"
	"strconv"
)

// ECN is a RoCE netdev's congestion notification settings as mlx5 (NVIDIA's
// MLNX_OFED driver) exposes them in class/net/<if>/ecn/: per priority,
// whether the reaction point (roce_rp: the sender slows down on a CNP) and
// the notification point (roce_np: the receiver of ECN-marked packets
// sends CNPs) are enabled, and the DSCP and 802.1p priority of the CNPs
// the notification point sends.
type ECN struct {
	RP, NP uint8 // bit p: enabled on priority p
	// CNPDSCP and CNPPrio are roce_np/cnp_dscp and cnp_802p_prio; -1 when
	// the driver does not expose them.
	CNPDSCP, CNPPrio int
}

// RoCEECN reads a netdev's ecn/roce_{rp,np}/enable/<0-7> (and the CNP
// settings when present). ErrNotFound when the netdev has no ecn
// directory (an upstream kernel's mlx5 has none; MLNX_OFED's has it).
func (f FS) RoCEECN(netdev string) (ECN, error) {
	if err := validIfName(netdev); err != nil {
		return ECN{}, err
	}
	dir := filepath.Join("class/net", netdev, "ecn")
	e := ECN{CNPDSCP: -1, CNPPrio: -1}
	for _, point := range []struct {
		name string
		bits *uint8
	}{{"roce_rp", &e.RP}, {"roce_np", &e.NP}} {
		for p := range 8 {
			v, err := f.ReadInt(filepath.Join(dir, point.name, "enable", strconv.Itoa(p)))
			if err != nil {
				return ECN{}, err
			}
			if v != 0 {
				*point.bits |= 1 << p
			}
		}
	}
	for _, a := range []struct {
		name string
		v    *int
	}{{"cnp_dscp", &e.CNPDSCP}, {"cnp_802p_prio", &e.CNPPrio}} {
		v, err := f.ReadInt(filepath.Join(dir, "roce_np", a.name))
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return ECN{}, err
		default:
			*a.v = v
		}
	}
	return e, nil
}

// On reports whether both points are enabled on priority p.
func (e ECN) On(p int) bool {
	return p >= 0 && p < 8 && e.RP&(1<<p) != 0 && e.NP&(1<<p) != 0
}
