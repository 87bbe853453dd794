package fakesysfs

import (
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/internal/machine"
)

// DualRailNode describes the synthetic node the scale benchmarks share:
// 8 GPUs and 16 single-port ConnectX InfiniBand PFs; per socket 4 PCIe
// switches, each holding one GPU and two NICs (a dual-rail HGX-like board).
// With 128 VFs per PF it has 2048 VFs.
func DualRailNode() (*machine.Description, error) {
	var roots []string
	for s := 0; s < 2; s++ {
		var ports []string
		for sw := 0; sw < 4; sw++ {
			base := 0x10 + s*0x80 + sw*0x10
			nic := func(bus, idx int) string {
				return fmt.Sprintf(`{"kind":"nic","bdf":"0000:%02x:00.0","rdma_dev":"mlx5_%d","netdev":"ibp%ds0","class":"0x020700"}`, bus, idx, bus)
			}
			ports = append(ports, fmt.Sprintf(`{"kind":"root_port","bdf":"0000:%02x:%02x.0","children":[
 {"kind":"switch","bdf":"0000:%02x:00.0","children":[
  {"kind":"switch_port","bdf":"0000:%02x:00.0","children":[{"kind":"gpu","bdf":"0000:%02x:00.0"}]},
  {"kind":"switch_port","bdf":"0000:%02x:01.0","children":[%s]},
  {"kind":"switch_port","bdf":"0000:%02x:02.0","children":[%s]}]}]}`,
				s*0x80, sw+1, base, base+1, base+2, base+1, nic(base+3, s*8+sw*2), base+1, nic(base+6, s*8+sw*2+1)))
		}
		roots = append(roots, fmt.Sprintf(`{"kind":"root","domain_bus":"pci0000:%02x","numa":%d,"children":[%s]}`, s*0x80, s, strings.Join(ports, ",")))
	}
	return machine.Parse([]byte(`{"id":"dual-rail","tree":[` + strings.Join(roots, ",") + `]}`))
}
