package netops_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

func TestECNSysfsWritesOnlyExistingFilesBelowTheRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "class/net/ens1np0/ecn/roce_np/enable")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "3"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := netops.ECNSysfs{Root: root}
	ctx := context.Background()
	if err := e.SetECN(ctx, "ens1np0", netops.ECNNotificationPoint, 3, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "3")); string(b) != "1" {
		t.Errorf("enable/3 = %q, want 1", b)
	}
	// No ecn/ file (an upstream mlx5, another priority): an error, no file.
	if err := e.SetECN(ctx, "ens1np0", netops.ECNNotificationPoint, 4, true); err == nil {
		t.Error("wrote a file that did not exist")
	}
	if _, err := os.Stat(filepath.Join(dir, "4")); !os.IsNotExist(err) {
		t.Errorf("enable/4 created: %v", err)
	}
	for _, bad := range []struct {
		netdev, point string
		prio          int
	}{{"../x", netops.ECNNotificationPoint, 3}, {"ens1np0", "roce_xx", 3}, {"ens1np0", netops.ECNReactionPoint, 8}} {
		if err := e.SetECN(ctx, bad.netdev, bad.point, bad.prio, true); err == nil {
			t.Errorf("SetECN(%q, %q, %d) accepted", bad.netdev, bad.point, bad.prio)
		}
	}
}
