package fakesysfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/railyard-io/railyard/internal/sysfs"
)

func smallTree(t *testing.T) string {
	t.Helper()
	d, err := SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Generate(dir, d, Options{TotalVFs: 16}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestKernelSetNumVFsFollowsTheKernelsRules(t *testing.T) {
	root := smallTree(t)
	k, fs, ctx := NewKernel(root), sysfs.New(root), context.Background()
	const pf = "0000:18:00.0"
	if err := k.SetNumVFs(ctx, pf, 4); err != nil {
		t.Fatal(err)
	}
	st, err := fs.SRIOV(pf)
	if err != nil || st.NumVFs != 4 || len(st.VFs) != 4 || st.TotalVFs != 16 {
		t.Fatalf("after 4: %+v, %v", st, err)
	}
	if err := k.SetNumVFs(ctx, pf, 4); err != nil {
		t.Fatalf("writing the current count: %v", err)
	}
	if err := k.SetNumVFs(ctx, pf, 6); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("4 -> 6 = %v, want EBUSY", err)
	}
	if err := k.SetNumVFs(ctx, pf, 17); !errors.Is(err, syscall.ERANGE) {
		t.Fatalf("17 of 16 = %v, want ERANGE", err)
	}
	if st, _ := fs.SRIOV(pf); st.NumVFs != 4 || len(st.VFs) != 4 {
		t.Fatalf("a refused write changed the PF: %+v", st)
	}
	vf3 := st.VFs[3].PCI
	if err := k.SetNumVFs(ctx, pf, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := fs.SRIOV(pf); st.NumVFs != 0 || len(st.VFs) != 0 {
		t.Fatalf("after 0: %+v", st)
	}
	if _, err := os.Lstat(filepath.Join(root, "bus/pci/devices", vf3)); !os.IsNotExist(err) {
		t.Fatalf("VF %s still exists: %v", vf3, err)
	}
	if err := k.SetNumVFs(ctx, pf, 6); err != nil {
		t.Fatal(err)
	}
	if st, _ := fs.SRIOV(pf); st.NumVFs != 6 || len(st.VFs) != 6 || st.VFs[5].Index != 5 {
		t.Fatalf("after 0 -> 6: %+v", st)
	}
}

func TestKernelSetNumVFsOnNonSRIOVFunction(t *testing.T) {
	root := smallTree(t)
	if err := NewKernel(root).SetNumVFs(context.Background(), "0000:19:00.0", 1); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("GPU sriov_numvfs = %v, want ENOENT", err)
	}
}

func TestKernelBindVFIOAndBack(t *testing.T) {
	root := smallTree(t)
	k, fs, ctx := NewKernel(root), sysfs.New(root), context.Background()
	if err := k.SetNumVFs(ctx, "0000:2a:00.0", 2); err != nil {
		t.Fatal(err)
	}
	st, _ := fs.SRIOV("0000:2a:00.0")
	vf := st.VFs[1].PCI
	if n, _ := fs.Netdevs(vf); len(n) != 1 || n[0] != "ens42np0v1" {
		t.Fatalf("VF netdevs = %v", n)
	}
	if err := k.Bind(ctx, vf, "vfio-pci"); err != nil {
		t.Fatal(err)
	}
	if d, _ := fs.Driver(vf); d != "vfio-pci" {
		t.Fatalf("driver = %q", d)
	}
	if n, _ := fs.Netdevs(vf); len(n) != 0 {
		t.Fatalf("vfio VF netdevs = %v", n)
	}
	if err := k.Bind(ctx, vf, "mlx5_core"); err != nil {
		t.Fatal(err)
	}
	if d, _ := fs.Driver(vf); d != "mlx5_core" {
		t.Fatalf("driver = %q", d)
	}
	n, _ := fs.Netdevs(vf)
	r, _ := fs.RDMADevices(vf)
	if len(n) != 1 || n[0] != "ens42np0v1" || len(r) != 1 || !strings.HasPrefix(r[0], "mlx5_") {
		t.Fatalf("rebound VF: netdevs %v rdma %v", n, r)
	}
	if !fs.NetdevExists("ens42np0v1") {
		t.Fatal("class/net lacks the rebound netdev")
	}
}

func TestInfiniBandVFsHaveZeroGUIDsAndPFsUniqueOnes(t *testing.T) {
	root := smallTree(t)
	fs := sysfs.New(root)
	if err := NewKernel(root).SetNumVFs(context.Background(), "0000:18:00.0", 2); err != nil {
		t.Fatal(err)
	}
	pf, err := fs.NodeGUID("mlx5_0")
	if err != nil || pf == ([8]byte{}) {
		t.Fatalf("PF node GUID = %x, %v", pf, err)
	}
	if port, err := fs.PortGUID("mlx5_0", 1); err != nil || port != pf {
		t.Fatalf("PF port GUID = %x, %v; want %x", port, err, pf)
	}
	other, _ := fs.NodeGUID("mlx5_1")
	if other == pf {
		t.Fatal("two PFs share a node GUID")
	}
	st, _ := fs.SRIOV("0000:18:00.0")
	r, _ := fs.RDMADevices(st.VFs[0].PCI)
	if g, err := fs.NodeGUID(r[0]); err != nil || g != ([8]byte{}) {
		t.Fatalf("IB VF node GUID = %x, %v; want zero", g, err)
	}
	if err := SetNodeGUID(root, r[0], [8]byte{2, 0, 0, 0, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if g, _ := fs.PortGUID(r[0], 1); g != [8]byte{2, 0, 0, 0, 0, 0, 0, 1} {
		t.Fatalf("port GUID after SetNodeGUID = %x", g)
	}
}

func TestMoveNetdevOut(t *testing.T) {
	root := smallTree(t)
	fs := sysfs.New(root)
	if err := MoveNetdevOut(root, "ens59np0"); err != nil {
		t.Fatal(err)
	}
	if fs.NetdevExists("ens59np0") {
		t.Fatal("netdev still in class/net")
	}
	if n, _ := fs.Netdevs("0000:3b:00.0"); len(n) != 0 {
		t.Fatalf("function still lists %v", n)
	}
}
