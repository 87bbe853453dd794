package sysfs_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// TestGIDTableOfAGeneratedRoCENodeFake: the GID table of a generated RoCE
// port (fakesysfs: the link-local v1/v2 pair at 0/1, the IPv4 address's
// at 2/3), an empty entry left out, entries past 9 in numeric order, an
// InfiniBand port's GID without type or netdev, and a missing device.
func TestGIDTableOfAGeneratedRoCENodeFake(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	fs := sysfs.New(root)
	got, err := fs.GIDTable("mlx5_1")
	if err != nil {
		t.Fatal(err)
	}
	ll, v4 := net.ParseIP("fe80::200:ff:fe00:1"), net.ParseIP("192.168.0.1").To16()
	eth := func(i int, gid net.IP, typ string) sysfs.GID {
		return sysfs.GID{Port: 1, Index: i, GID: gid, Type: typ, Netdev: "ens42np0", LinkLayer: "Ethernet"}
	}
	want := []sysfs.GID{eth(0, ll, "IB/RoCE v1"), eth(1, ll, "RoCE v2"), eth(2, v4, "IB/RoCE v1"), eth(3, v4, "RoCE v2")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GIDTable(mlx5_1) (-want +got):\n%s", diff)
	}

	// An IPv6 address added later lands after the IPv4 pair, at 10 and 11
	// here, past an empty entry the kernel keeps zeroed.
	port := filepath.Join(root, "class/infiniband/mlx5_1/ports/1")
	v6 := net.ParseIP("fd00:56::7")
	write := func(rel, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(port, rel), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("gids/4", "0000:0000:0000:0000:0000:0000:0000:0000")
	for _, e := range []struct {
		i   string
		typ string
	}{{"10", "IB/RoCE v1"}, {"11", "RoCE v2"}} {
		write("gids/"+e.i, "fd00:0056:0000:0000:0000:0000:0000:0007")
		write("gid_attrs/types/"+e.i, e.typ)
		write("gid_attrs/ndevs/"+e.i, "ens42np0")
	}
	got, err = fs.GIDTable("mlx5_1")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, eth(10, v6, "IB/RoCE v1"), eth(11, v6, "RoCE v2"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GIDTable(mlx5_1) with an IPv6 address (-want +got):\n%s", diff)
	}

	ib, err := fs.GIDTable("mlx5_0")
	if err != nil || len(ib) != 1 || ib[0].LinkLayer != "InfiniBand" || ib[0].Netdev != "" || ib[0].GID.To16() == nil {
		t.Errorf("GIDTable(mlx5_0) = %+v, %v; want one InfiniBand GID without netdev", ib, err)
	}
	if _, err := fs.GIDTable("mlx5_9"); !errors.Is(err, sysfs.ErrNotFound) {
		t.Errorf("GIDTable of a missing device: %v, want ErrNotFound", err)
	}
	write("gids/5", "not-a-gid")
	if _, err := fs.GIDTable("mlx5_1"); err == nil {
		t.Error("GIDTable accepted a garbled GID")
	}
}
