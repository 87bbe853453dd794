package discovery

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bigNode describes 8 GPUs and 16 ConnectX PFs: per socket 4 switches, each
// with one GPU and two single-port NICs (like dual-rail HGX boards).
func bigNode() string {
	var roots []string
	for s := 0; s < 2; s++ {
		var ports []string
		for sw := 0; sw < 4; sw++ {
			base := 0x10 + s*0x80 + sw*0x10
			ports = append(ports, fmt.Sprintf(`{"kind":"root_port","bdf":"0000:%02x:%02x.0","children":[
 {"kind":"switch","bdf":"0000:%02x:00.0","children":[
  {"kind":"switch_port","bdf":"0000:%02x:00.0","children":[{"kind":"gpu","bdf":"0000:%02x:00.0"}]},
  {"kind":"switch_port","bdf":"0000:%02x:01.0","children":[{"kind":"nic","bdf":"0000:%02x:00.0","rdma_dev":"mlx5_%d","netdev":"ibp%ds0","class":"0x020700"}]},
  {"kind":"switch_port","bdf":"0000:%02x:02.0","children":[{"kind":"nic","bdf":"0000:%02x:00.0","rdma_dev":"mlx5_%d","netdev":"ibp%ds0","class":"0x020700"}]}]}]}`,
				s*0x80, sw+1, base, base+1, base+2, base+1, base+3, s*8+sw*2, base+3, base+1, base+6, s*8+sw*2+1, base+6))
		}
		roots = append(roots, fmt.Sprintf(`{"kind":"root","domain_bus":"pci0000:%02x","numa":%d,"children":[%s]}`, s*0x80, s, strings.Join(ports, ",")))
	}
	return `{"id":"big","tree":[` + strings.Join(roots, ",") + `]}`
}

func TestBigNodeShape(t *testing.T) {
	topo := mustDiscover(t, generate(t, bigNode(), 128))
	vfs := 0
	for _, n := range topo.NICs {
		vfs += len(n.VFs)
	}
	if len(topo.GPUs) != 8 || len(topo.NICs) != 16 || vfs != 2048 {
		t.Fatalf("got %d GPUs, %d PFs, %d VFs; want 8, 16, 2048", len(topo.GPUs), len(topo.NICs), vfs)
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings: %v", topo.Warnings[:min(5, len(topo.Warnings))])
	}
}

// BenchmarkDiscover16PFx128VFs discovers a node with 16 PFs x 128 VFs
// (2048 VFs, ~2100 PCI functions). Goal: under 100 ms per discovery.
func BenchmarkDiscover16PFx128VFs(b *testing.B) {
	root := generate(b, bigNode(), 128)
	ctx := context.Background()
	// CPU time per discovery is reported too: on a shared, loaded machine
	// it is steadier than wall time.
	start := cpuTime()
	for b.Loop() {
		if _, err := Discover(ctx, root); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
