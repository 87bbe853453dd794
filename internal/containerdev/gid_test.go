package containerdev

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// gidNode is a generated small node (fakesysfs.SmallNode: mlx5_0
// InfiniBand, mlx5_1 and mlx5_2 RoCE, each RoCE port with 192.168.0.1 at
// GID 2/3) and its root.
func gidNode(t *testing.T) (sysfs.FS, string) {
	t.Helper()
	root := t.TempDir()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	return sysfs.New(root), root
}

// addGID writes a GID entry of port 1 of dev as the kernel shows it.
func addGID(t *testing.T, root, dev string, index, gid, typ, ndev string) {
	t.Helper()
	port := filepath.Join(root, "class/infiniband", dev, "ports/1")
	for rel, v := range map[string]string{"gids/" + index: gid, "gid_attrs/types/" + index: typ, "gid_attrs/ndevs/" + index: ndev} {
		if err := os.WriteFile(filepath.Join(port, rel), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func table(t *testing.T, fs sysfs.FS, dev string) []sysfs.GID {
	t.Helper()
	g, err := fs.GIDTable(dev)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPickGIDFromAGeneratedTableFake: the RoCE v2 entry of the netdev's
// IPv4 address (index 3, the usual one), IPv4 before IPv6 whatever order
// the addresses come in, IPv6 when it is the only family, an entry of
// another netdev or of RoCE v1 never, and the errors of an address with
// no GID and of an InfiniBand HCA.
func TestPickGIDFromAGeneratedTableFake(t *testing.T) {
	t.Parallel()
	fs, root := gidNode(t)
	v4, v6 := net.ParseIP("192.168.0.1"), net.ParseIP("fd00:56::7")
	addGID(t, root, "mlx5_1", "4", "fd00:0056:0000:0000:0000:0000:0000:0007", "IB/RoCE v1", "ens42np0")
	addGID(t, root, "mlx5_1", "5", "fd00:0056:0000:0000:0000:0000:0000:0007", "RoCE v2", "ens42np0")
	// The same IPv4 address on another netdev (a second interface of the
	// port, a macvlan) at 6 and 7: never the pod's.
	addGID(t, root, "mlx5_1", "7", "0000:0000:0000:0000:0000:ffff:c0a8:0001", "RoCE v2", "ens42np0v1")
	tab := table(t, fs, "mlx5_1")
	for _, c := range []struct {
		name   string
		netdev string
		addrs  []net.IP
		want   HCAGID
	}{
		{"IPv4", "ens42np0", []net.IP{v4}, HCAGID{HCA: "mlx5_1", Netdev: "ens42np0", Addr: "192.168.0.1", Port: 1, Index: 3}},
		{"IPv4 first", "ens42np0", []net.IP{v6, v4}, HCAGID{HCA: "mlx5_1", Netdev: "ens42np0", Addr: "192.168.0.1", Port: 1, Index: 3}},
		{"IPv6 only", "ens42np0", []net.IP{v6}, HCAGID{HCA: "mlx5_1", Netdev: "ens42np0", Addr: "fd00:56::7", Port: 1, Index: 5}},
		{"another netdev's entry", "ens42np0v1", []net.IP{v4}, HCAGID{HCA: "mlx5_1", Netdev: "ens42np0v1", Addr: "192.168.0.1", Port: 1, Index: 7}},
	} {
		got, err := PickGID("mlx5_1", c.netdev, tab, c.addrs)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	_, err := PickGID("mlx5_1", "ens42np0", tab, []net.IP{net.ParseIP("10.56.0.9")})
	if !errors.Is(err, ErrNoRoCEGID) || !strings.Contains(err.Error(), "exclusive netns mode") {
		t.Errorf("an address without a GID: %v, want ErrNoRoCEGID with the fix", err)
	}
	if _, err := PickGID("mlx5_0", "ibp24s0", table(t, fs, "mlx5_0"), []net.IP{v4}); !errors.Is(err, ErrNotRoCE) {
		t.Errorf("an InfiniBand HCA: %v, want ErrNotRoCE", err)
	}
}

// TestCheckGIDIndexesFake: one index for every HCA is that index; HCAs
// whose GIDs moved (an extra address before the IPv4 one on one rail's
// netdev) are a *GIDIndexMismatchError naming each index and the fix.
func TestCheckGIDIndexesFake(t *testing.T) {
	t.Parallel()
	fs, root := gidNode(t)
	v4 := net.ParseIP("192.168.0.1")
	a, err := PickGID("mlx5_1", "ens42np0", table(t, fs, "mlx5_1"), []net.IP{v4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := PickGID("mlx5_2", "ens59np0", table(t, fs, "mlx5_2"), []net.IP{v4})
	if err != nil {
		t.Fatal(err)
	}
	if idx, err := CheckGIDIndexes([]HCAGID{b, a}); idx != 3 || err != nil {
		t.Errorf("CheckGIDIndexes = %d, %v; want 3", idx, err)
	}
	// mlx5_2's netdev had another address first: its IPv4 entries moved.
	addGID(t, root, "mlx5_2", "3", "0000:0000:0000:0000:0000:ffff:0a38:0001", "RoCE v2", "ens59np0")
	addGID(t, root, "mlx5_2", "5", "0000:0000:0000:0000:0000:ffff:c0a8:0001", "RoCE v2", "ens59np0")
	b, err = PickGID("mlx5_2", "ens59np0", table(t, fs, "mlx5_2"), []net.IP{v4})
	if err != nil || b.Index != 5 {
		t.Fatalf("PickGID after the move: %+v, %v; want index 5", b, err)
	}
	idx, err := CheckGIDIndexes([]HCAGID{b, a})
	var mm *GIDIndexMismatchError
	if idx != -1 || !errors.As(err, &mm) {
		t.Fatalf("CheckGIDIndexes = %d, %v; want a *GIDIndexMismatchError", idx, err)
	}
	for _, s := range []string{"mlx5_1 port 1: index 3", "mlx5_2 port 1: index 5", "leave NCCL_IB_GID_INDEX unset"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("mismatch error %q does not say %q", err, s)
		}
	}
	if got := GIDIndexes([]HCAGID{a, b}); got != "mlx5_1=3,mlx5_2=5" {
		t.Errorf("GIDIndexes = %q", got)
	}
	if idx, err := CheckGIDIndexes(nil); idx != -1 || err != nil {
		t.Errorf("CheckGIDIndexes(nil) = %d, %v", idx, err)
	}
}
