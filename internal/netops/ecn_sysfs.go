package netops

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
)

// ECN points of MLNX_OFED's mlx5 (class/net/<if>/ecn/<point>/enable/<p>):
// the reaction point slows a sender on CNPs, the notification point sends
// CNPs for ECN-marked packets.
const (
	ECNReactionPoint     = "roce_rp"
	ECNNotificationPoint = "roce_np"
)

// ECNSysfs turns ECN on or off per priority by writing sysfs below Root
// ("/sys"), as `echo 1 > /sys/class/net/<if>/ecn/roce_np/enable/3` does;
// its writes stay beneath the root and never create a file, like
// SRIOVSysfs's (the same writer).
type ECNSysfs struct {
	Root string
}

// SetECN writes netdev's ecn/<point>/enable/<prio>.
func (e ECNSysfs) SetECN(_ context.Context, netdev, point string, prio int, on bool) error {
	if err := ValidIfName(netdev); err != nil {
		return err
	}
	if point != ECNReactionPoint && point != ECNNotificationPoint {
		return fmt.Errorf("ECN point %q: want %s or %s", point, ECNReactionPoint, ECNNotificationPoint)
	}
	if prio < 0 || prio > 7 {
		return fmt.Errorf("priority %d: want 0-7", prio)
	}
	v := "0"
	if on {
		v = "1"
	}
	rel := filepath.Join("class/net", netdev, "ecn", point, "enable", strconv.Itoa(prio))
	if err := SRIOVSysfs(e).writeAttr(rel, v); err != nil {
		return fmt.Errorf("ECN %s priority %d of %s: %w", point, prio, netdev, err)
	}
	return nil
}
