package fakesysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TrafficClass is what an RDMA port's tc/<port>/traffic_class shows
// (MLNX_OFED's mlx5_ib, drivers/infiniband/hw/mlx5/main_ext.c): Global is
// the class set for the whole port, -1 for none; Rules are per-destination
// lines as the driver prints them ("dst_ip=10.0.0.0/8,tclass=96").
type TrafficClass struct {
	Global int
	Rules  []string
}

// LosslessTrafficClass is a port set up by NVIDIA's lossless RoCE recipe
// (echo 106 > .../tc/1/traffic_class): tclass 106, DSCP 26, priority 3
// under mlx5's default DSCP map. Generated trees write it on every port of
// an mlx5 RoCE NIC, as a node configured for lossless RoCE shows it; the
// driver's own default is none (TrafficClass{Global: -1}: an empty file).
var LosslessTrafficClass = TrafficClass{Global: 106}

// content is the file as traffic_class_show prints it.
func (t TrafficClass) content() string {
	var b strings.Builder
	if t.Global >= 0 {
		fmt.Fprintf(&b, "Global tclass=%d\n", t.Global)
	}
	for _, r := range t.Rules {
		b.WriteString(r + "\n")
	}
	return b.String()
}

// SetTrafficClass writes RDMA device rdma's tc/<port>/traffic_class
// (class/infiniband/<rdma> must exist).
func SetTrafficClass(root, rdma string, port int, t TrafficClass) error {
	dir := filepath.Join(root, "class/infiniband", rdma)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("fakesysfs: RDMA device %s: %w", rdma, err)
	}
	return writeTrafficClass(filepath.Join(dir, "tc", strconv.Itoa(port), "traffic_class"), t)
}

// writeTrafficClass writes the file exactly (an unset class is an empty
// file, not a newline), replacing what is there.
func writeTrafficClass(p string, t TrafficClass) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(t.content()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// RemoveTrafficClass removes an RDMA device's tc/ directory, as on a
// kernel whose mlx5 has none (upstream's).
func RemoveTrafficClass(root, rdma string) error {
	dir := filepath.Join(root, "class/infiniband", rdma)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("fakesysfs: RDMA device %s: %w", rdma, err)
	}
	return os.RemoveAll(filepath.Join(dir, "tc"))
}
