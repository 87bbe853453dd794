package fakesysfs

import "github.com/railyard-io/railyard/internal/machine"

// SmallNode describes the synthetic node that node setup and doctor tests
// share: one socket, two PCIe switches each holding one GPU and one
// ConnectX-6 (the first InfiniBand HDR, 0000:18:00.0 ibp24s0 mlx5_0; the
// second RoCE, 0000:2a:00.0 ens42np0 mlx5_1), and a third ConnectX-6 RoCE
// NIC on the root port 0000:00:03.0 (0000:3b:00.0 ens59np0 mlx5_2) that
// tests use as the PF no policy names.
func SmallNode() (*machine.Description, error) {
	return machine.Parse([]byte(`{"id":"small-node","tree":[
 {"kind":"root","domain_bus":"pci0000:00","numa":0,"children":[
  {"kind":"root_port","bdf":"0000:00:01.0","children":[
   {"kind":"switch","bdf":"0000:16:00.0","children":[
    {"kind":"switch_port","bdf":"0000:17:00.0","children":[{"kind":"gpu","bdf":"0000:19:00.0"}]},
    {"kind":"switch_port","bdf":"0000:17:01.0","children":[
     {"kind":"nic","bdf":"0000:18:00.0","device":"0x101b","rdma_dev":"mlx5_0","netdev":"ibp24s0","link_layer":"InfiniBand","rate":"200 Gb/sec (4X HDR)","class":"0x020700"}]}]}]},
  {"kind":"root_port","bdf":"0000:00:02.0","children":[
   {"kind":"switch","bdf":"0000:28:00.0","children":[
    {"kind":"switch_port","bdf":"0000:29:00.0","children":[{"kind":"gpu","bdf":"0000:2b:00.0"}]},
    {"kind":"switch_port","bdf":"0000:29:01.0","children":[
     {"kind":"nic","bdf":"0000:2a:00.0","device":"0x101d","rdma_dev":"mlx5_1","netdev":"ens42np0","link_layer":"Ethernet","rate":"100 Gb/sec (4X EDR)","class":"0x020000"}]}]}]},
  {"kind":"root_port","bdf":"0000:00:03.0","children":[
   {"kind":"nic","bdf":"0000:3b:00.0","device":"0x101d","rdma_dev":"mlx5_2","netdev":"ens59np0","link_layer":"Ethernet","rate":"100 Gb/sec (4X EDR)","class":"0x020000"}]}]}]}`))
}
