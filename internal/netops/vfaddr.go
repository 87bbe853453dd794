package netops

import "net"

// VFAddresses are the addresses of one SR-IOV VF as its PF reports them
// (`ip link show <pf>`: "vf N link/ether M ... NODE_GUID G, PORT_GUID G").
// A nil field is one the driver does not report: the kernel sends
// IFLA_VF_IB_NODE_GUID/IFLA_VF_IB_PORT_GUID only where the driver can read
// them back (mlx5 IPoIB PFs since Linux 5.5), and IFLA_VF_MAC for Ethernet
// VFs.
type VFAddresses struct {
	MAC      net.HardwareAddr
	NodeGUID net.HardwareAddr
	PortGUID net.HardwareAddr
}
