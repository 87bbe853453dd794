package machines

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/machine"
)

// dgx2Synthetic builds a DGX-2 tree from the observations published in
// dgx2_partial.json (which has matrix rows but no tree): per socket two
// host bridges, each with an upper switch over two leaf switches, each leaf
// holding 2 GPUs and 1 HCA; mlx5_8/9 on a host bridge of their own on
// socket 1. Every bridge address is synthetic; the layout is the published
// one ("2 GPUs + 1 HCA per leaf PCIe switch (PIX), two leaf switches under
// one upper switch (PXB to the neighbour HCA), other upper switch on the
// same socket = NODE, other socket SYS").
func dgx2Synthetic() string {
	var roots []string
	gpu, nic := 0, 0
	for hb, bus := range []int{0x10, 0x30, 0x90, 0xb0} {
		var leaves []string
		for leaf := 0; leaf < 2; leaf++ {
			b := bus + 3 + leaf*8
			leaves = append(leaves, fmt.Sprintf(`{"kind":"switch_port","bdf":"0000:%02x:%02x.0","children":[
 {"kind":"switch","bdf":"0000:%02x:00.0","children":[
  {"kind":"switch_port","bdf":"0000:%02x:00.0","children":[{"kind":"gpu","bdf":"0000:%02x:00.0","name":"GPU%d"}]},
  {"kind":"switch_port","bdf":"0000:%02x:01.0","children":[{"kind":"gpu","bdf":"0000:%02x:00.0","name":"GPU%d"}]},
  {"kind":"switch_port","bdf":"0000:%02x:02.0","children":[{"kind":"nic","bdf":"0000:%02x:00.0","rdma_dev":"mlx5_%d","class":"0x020700"}]}]}]}`,
				bus+2, leaf, b, b+1, b+2, gpu, b+1, b+3, gpu+1, b+1, b+4, nic))
			gpu += 2
			nic++
		}
		roots = append(roots, fmt.Sprintf(`{"kind":"root","domain_bus":"pci0000:%02x","numa":%d,"children":[
 {"kind":"root_port","bdf":"0000:%02x:00.0","children":[
  {"kind":"switch","bdf":"0000:%02x:00.0","children":[%s]}]}]}`, bus, hb/2, bus, bus+1, strings.Join(leaves, ",")))
	}
	roots = append(roots, `{"kind":"root","domain_bus":"pci0000:e0","numa":1,"children":[
 {"kind":"root_port","bdf":"0000:e0:01.0","children":[
  {"kind":"nic","bdf":"0000:e1:00.0","rdma_dev":"mlx5_8","class":"0x020700"},
  {"kind":"nic","bdf":"0000:e1:00.1","rdma_dev":"mlx5_9","class":"0x020700"}]}]}`)
	return `{"id":"dgx2_synthetic","tree":[` + strings.Join(roots, ",") + `]}`
}

// TestDGX2PublishedRows checks the published DGX-2 rows (GPU0-GPU4 x
// mlx5_0-9: PIX, PXB, NODE and SYS on one machine) against discovery of a
// tree built from the description's observations.
func TestDGX2PublishedRows(t *testing.T) {
	if _, err := RawDescription("dgx2_partial.json"); err == nil {
		t.Fatal("dgx2_partial.json unexpectedly has a tree")
	}
	raw, err := files.ReadFile("dgx2_partial.json")
	if err != nil {
		t.Fatal(err)
	}
	rows := matrixOnly(t, raw)
	d, err := machine.Parse([]byte(dgx2Synthetic()))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := fakesysfs.Generate(dir, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.GPUs) != 16 || len(topo.NICs) != 10 {
		t.Fatalf("%d GPUs, %d NICs; want 16, 10", len(topo.GPUs), len(topo.NICs))
	}
	gpuAddr, nicAddr := map[string]string{}, map[string]string{}
	d.Walk(func(n, _ *machine.Node) {
		switch n.Kind {
		case machine.KindGPU:
			gpuAddr[n.Label] = n.Address
		case machine.KindNIC:
			nicAddr[n.RDMA] = n.Address
		}
	})
	checked := 0
	for gpu, cols := range rows {
		for nic, want := range cols {
			if got := topo.Class(gpuAddr[gpu], nicAddr[nic]).String(); got != want {
				t.Errorf("%s x %s: %s, published %s", gpu, nic, got, want)
			}
			checked++
		}
	}
	if checked < 40 {
		t.Fatalf("checked only %d published entries", checked)
	}
}

// matrixOnly reads the matrix of a description that has no tree.
func matrixOnly(t *testing.T, raw []byte) map[string]map[string]string {
	t.Helper()
	// Give the description a one-device tree so Parse reads its matrix.
	withTree := strings.Replace(string(raw), `"tree": [`, `"tree": [{"kind":"root","domain_bus":"pci0000:00","children":[{"kind":"gpu","bdf":"0000:01:00.0"}]}`, 1)
	d, err := machine.Parse([]byte(withTree))
	if err != nil {
		t.Fatalf("reading the published matrix: %v", err)
	}
	return d.Matrix
}
