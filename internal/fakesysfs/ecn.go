package fakesysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ECN is what a RoCE netdev's ecn/ directory says (MLNX_OFED's mlx5): bit
// p of RP and NP enables the reaction and notification point on priority
// p; CNPDSCP and CNPPrio are the CNPs' DSCP and 802.1p priority.
type ECN struct {
	RP, NP           uint8
	CNPDSCP, CNPPrio int
}

// DefaultECN is mlx5's default: both points on every priority, CNPs sent
// with DSCP 48 at priority 6.
var DefaultECN = ECN{RP: 0xff, NP: 0xff, CNPDSCP: 48, CNPPrio: 6}

// SetECN writes netdev's ecn/roce_{rp,np}/enable/<0-7> and the CNP
// settings (class/net/<netdev> must exist).
func SetECN(root, netdev string, e ECN) error {
	nd := filepath.Join(root, "class/net", netdev)
	if _, err := os.Stat(nd); err != nil {
		return fmt.Errorf("fakesysfs: netdev %s: %w", netdev, err)
	}
	g := &generator{root: root}
	rel := filepath.Join("class/net", netdev, "ecn")
	for _, point := range []struct {
		name string
		bits uint8
	}{{"roce_rp", e.RP}, {"roce_np", e.NP}} {
		for p := range 8 {
			if err := g.write(filepath.Join(rel, point.name, "enable", strconv.Itoa(p)), strconv.Itoa(int(point.bits>>p&1))); err != nil {
				return err
			}
		}
	}
	if err := g.write(filepath.Join(rel, "roce_np/cnp_dscp"), strconv.Itoa(e.CNPDSCP)); err != nil {
		return err
	}
	return g.write(filepath.Join(rel, "roce_np/cnp_802p_prio"), strconv.Itoa(e.CNPPrio))
}

// RemoveECN removes a netdev's ecn/ directory, as on a kernel whose mlx5
// has none (upstream's).
func RemoveECN(root, netdev string) error {
	dir := filepath.Join(root, "class/net", netdev)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("fakesysfs: netdev %s: %w", netdev, err)
	}
	return os.RemoveAll(filepath.Join(dir, "ecn"))
}
