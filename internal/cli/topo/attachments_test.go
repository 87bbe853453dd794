package topo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
)

// putRecord writes one railyard-cni record as ADD leaves it.
func putRecord(t *testing.T, dir, key, sandbox, ifname, rdma string, table int, gid *containerdev.HCAGID) {
	t.Helper()
	r := &state.Record{Key: key, Network: "rail", ContainerID: sandbox, IfName: ifname, Netns: "/var/run/netns/x", Phase: "added",
		PCI: "0000:" + key + ":00.0", RDMA: rdma, RailTable: table, GID: gid, Config: []byte("{}")}
	if err := (state.Store{Dir: dir}).Put(r); err != nil {
		t.Fatal(err)
	}
}

// --cni-state prints each sandbox's attachments with their GID index,
// and per sandbox one index (a pod whose HCAs agree) or the mismatch
// with the fix (NCCL_IB_GID_INDEX would be wrong for one of them).
func TestCNIStateShowsGIDIndexesAndMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, odd := "aaaaaaaaaaaaaaaa1111", "bbbbbbbbbbbbbbbb2222"
	putRecord(t, dir, "18", good, "eth1", "", 10003, &containerdev.HCAGID{HCA: "mlx5_0", Netdev: "eth1", Addr: "192.168.0.2", Port: 1, Index: 3})
	putRecord(t, dir, "40", good, "eth2", "", 10004, &containerdev.HCAGID{HCA: "mlx5_1", Netdev: "eth2", Addr: "192.168.1.2", Port: 1, Index: 3})
	putRecord(t, dir, "9a", odd, "eth1", "mlx5_2", 10003, &containerdev.HCAGID{HCA: "mlx5_2", Netdev: "eth1", Addr: "192.168.2.5", Port: 1, Index: 3})
	putRecord(t, dir, "c1", odd, "eth2", "mlx5_3", 10004, &containerdev.HCAGID{HCA: "mlx5_3", Netdev: "eth2", Addr: "192.168.3.5", Port: 1, Index: 5})
	putRecord(t, dir, "d0", "cccccccccccccccc", "eth1", "", 0, nil) // InfiniBand: no GID to choose
	out, _, err := run(t, "--machine", "roce-8gpu-4nic", "--cni-state", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"railyard-cni attachments (" + dir + "): 5",
		"aaaaaaaaaaaaa  eth2    rail     0000:40:00.0  mlx5_1  3          192.168.1.2  10004",
		"bbbbbbbbbbbbb  eth2    rail     0000:c1:00.0  mlx5_3  5          192.168.3.5  10004",
		"ccccccccccccc  eth1    rail     0000:d0:00.0  -       -          -            -           added",
		"sandbox aaaaaaaaaaaaa: RoCE v2 GID index 3 on every HCA (mlx5_0=3,mlx5_1=3)",
		"sandbox bbbbbbbbbbbbb: the pod's HCAs have their RoCE v2 GIDs at different indexes (mlx5_2 port 1: index 3",
		"mlx5_3 port 1: index 5 (192.168.3.5 on eth2)): leave NCCL_IB_GID_INDEX unset",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sandbox ccccccccccccc") {
		t.Errorf("a sandbox without GIDs is judged:\n%s", out)
	}
}

// A missing directory, a file in its place and a corrupt record are
// errors naming the state directory (the good records still print).
func TestCNIStateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{file, "not a directory (a regular file)"},
	} {
		if _, _, err := run(t, "--machine", "roce-8gpu-4nic", "--cni-state", tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--cni-state %s: %v, want %q", tc.path, err, tc.want)
		}
	}
	st := t.TempDir()
	putRecord(t, st, "18", "aaaa", "eth1", "mlx5_0", 0, nil)
	if err := os.WriteFile(filepath.Join(st, "devices", "zz.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "--machine", "roce-8gpu-4nic", "--cni-state", st)
	if err == nil || !strings.Contains(err.Error(), "record of zz") || !strings.Contains(out, "mlx5_0") {
		t.Errorf("corrupt record: %v\n%s", err, out)
	}
}
