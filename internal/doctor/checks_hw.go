package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
)

func (n *node) devices(context.Context) []Check {
	g, nics := n.topo.GPUs, n.topo.NICs
	gc := Check{ID: "gpus", Status: OK, Summary: fmt.Sprintf("%d GPUs", len(g)), Read: []string{"sysfs bus/pci/devices: NVIDIA/AMD display and 3D controllers"}}
	if len(g) == 0 {
		gc.Status, gc.Summary = Fail, "no GPU found"
		gc.Fix = "check that the GPUs are visible (lspci) and bound to their driver (nvidia, amdgpu)"
	}
	nc := Check{ID: "nics", Status: OK, Summary: fmt.Sprintf("%d RDMA NICs", len(nics)), Read: []string{"sysfs bus/pci/devices/*/infiniband"}}
	for _, x := range nics {
		nc.Read = append(nc.Read, fmt.Sprintf("%s %s (%s, %s)", x.PCI, x.RDMA, x.Netdev, x.LinkLayer))
	}
	if len(nics) == 0 {
		nc.Status, nc.Summary = Fail, "no RDMA NIC found"
		nc.Fix = "load the NIC's RDMA driver (mlx5_ib for ConnectX: modprobe mlx5_ib) and check rdma link show"
	}
	return []Check{gc, nc}
}

// policyPFs checks that every PF of the policy names an RDMA NIC of this
// node: an entry that matches none (a typo in the PCI address, an unknown
// netdev, a GPU's address) would otherwise be skipped by every check that
// looks NICs up in the policy.
func (n *node) policyPFs(context.Context) []Check {
	if n.opt.Policy == nil {
		return nil
	}
	var out []Check
	for _, pf := range n.opt.Policy.PFs {
		c := Check{ID: "policy-pf", Subject: pf.Name(), Status: OK}
		byPCI, byNetdev := -1, -1
		for i, x := range n.topo.NICs {
			if pf.PCIAddress != "" && x.PCI == pf.PCIAddress {
				byPCI = i
			}
			if pf.Netdev != "" && slices.Contains(append([]string{x.Netdev}, x.Netdevs...), pf.Netdev) {
				byNetdev = i
			}
		}
		var wrong []string
		if pf.PCIAddress != "" {
			c.Read = append(c.Read, fmt.Sprintf("sysfs bus/pci/devices/%s: %s", pf.PCIAddress, n.describe(pf.PCIAddress)))
			if byPCI < 0 {
				wrong = append(wrong, fmt.Sprintf("no RDMA NIC at %s (%s)", pf.PCIAddress, n.describe(pf.PCIAddress)))
			}
		}
		if pf.Netdev != "" {
			c.Read = append(c.Read, fmt.Sprintf("sysfs class/net of the RDMA NICs: netdev %s found=%v", pf.Netdev, byNetdev >= 0))
			if byNetdev < 0 {
				wrong = append(wrong, fmt.Sprintf("no RDMA NIC has netdev %s", pf.Netdev))
			}
		}
		if pf.PCIAddress == "" && pf.Netdev == "" {
			wrong = append(wrong, "the entry names neither a pciAddress nor a netdev")
		}
		if len(wrong) > 0 {
			c.Status, c.Summary = Fail, "the policy names a PF this node does not have: "+strings.Join(wrong, "; ")
			c.Fix = "fix the policy's pciAddress or netdev (railyard topo lists the node's RDMA NICs)"
		} else {
			x := n.topo.NICs[max(byPCI, byNetdev)]
			c.Summary = fmt.Sprintf("names NIC %s (%s, %s)", x.PCI, x.RDMA, orDash(x.Netdev))
		}
		out = append(out, c)
	}
	return out
}

// describe says what the PCI device at addr is, for messages.
func (n *node) describe(addr string) string {
	if _, ok := n.topo.GPU(addr); ok {
		return "a GPU"
	}
	if _, ok := n.topo.NIC(addr); ok {
		return "an RDMA NIC"
	}
	if _, ok := n.topo.Device(addr); ok {
		return "a PCI device without RDMA"
	}
	return "no such PCI device"
}

// pairs checks that every GPU's rail NIC is within PXB.
func (n *node) pairs(context.Context) []Check {
	var out []Check
	for _, r := range n.topo.Rails {
		nic, _ := n.topo.NIC(r.NIC)
		c := Check{ID: "gpu-nic", Subject: "GPU " + r.GPU, Status: OK,
			Summary: fmt.Sprintf("nearest NIC %s (%s) is %s", nic.RDMA, r.NIC, r.Class),
			Read:    []string{fmt.Sprintf("PCI tree in sysfs: GPU %s and NIC %s meet at %s", r.GPU, r.NIC, r.Class)}}
		if r.Source != "" {
			c.Read[0] = fmt.Sprintf("%s: GPU %s, NIC %s: %s", r.Source, r.GPU, r.NIC, r.Class)
		}
		if !r.Class.GPUDirect() {
			c.Status = Warn
			c.Summary += ": NCCL uses GPUDirect RDMA only up to PXB by default, so this GPU's traffic goes through host memory"
			c.Fix = "put a NIC under the GPU's PCIe switch; or accept the path with NCCL_NET_GDR_LEVEL=PHB (measure first); " +
				"on a VM that hides its switches, give discovery the vendor's NCCL topology file (railyard topo --nccl-topo)"
		}
		out = append(out, c)
	}
	return out
}

func (n *node) ports(context.Context) []Check {
	var out []Check
	for _, x := range n.topo.NICs {
		for _, p := range x.Ports {
			c := Check{ID: "ports", Subject: fmt.Sprintf("%s/%d", x.RDMA, p.Num), Status: OK,
				Summary: fmt.Sprintf("%s, %s, %s", p.State, p.PhysState, p.Rate),
				Read:    []string{fmt.Sprintf("sysfs class/infiniband/%s/ports/%d/{state,phys_state,rate}", x.RDMA, p.Num)}}
			if !p.Active() {
				c.Status = Fail
				c.Summary = fmt.Sprintf("port is %s (%s)", p.State, p.PhysState)
				if x.LinkLayer == v1alpha1.LinkLayerInfiniBand && p.State == "INIT" {
					c.Fix = "the link is up but no subnet manager configured the port: start opensm on the fabric (or check UFM)"
				} else {
					c.Fix = "check the cable and the switch port (ibstat, ethtool " + orDash(x.Netdev) + ")"
				}
			}
			out = append(out, c)
		}
	}
	return out
}

func (n *node) linkLayers(context.Context) []Check {
	var out []Check
	for _, x := range n.topo.NICs {
		pf := n.policyPF(x)
		if pf == nil || pf.LinkLayer == "" {
			continue
		}
		c := Check{ID: "link-layer", Subject: x.RDMA, Status: OK, Summary: x.LinkLayer + " as the policy says",
			Read: []string{fmt.Sprintf("sysfs class/infiniband/%s/ports/1/link_layer: %s; policy: %s", x.RDMA, x.LinkLayer, pf.LinkLayer)}}
		if x.LinkLayer != pf.LinkLayer {
			c.Status = Fail
			c.Summary = fmt.Sprintf("%s, the policy wants %s", x.LinkLayer, pf.LinkLayer)
			c.Fix = fmt.Sprintf("mlxconfig -d %s set LINK_TYPE_P1=%s and reboot (or fix the policy)", x.PCI,
				map[string]string{v1alpha1.LinkLayerInfiniBand: "1", v1alpha1.LinkLayerEthernet: "2"}[pf.LinkLayer])
		}
		out = append(out, c)
	}
	return out
}

func (n *node) roceGIDs(context.Context) []Check {
	var out []Check
	for _, x := range n.topo.NICs {
		for _, p := range x.Ports {
			if p.LinkLayer != v1alpha1.LinkLayerEthernet {
				continue
			}
			c := Check{ID: "roce-gid", Subject: fmt.Sprintf("%s/%d", x.RDMA, p.Num), Status: OK,
				Summary: fmt.Sprintf("RoCE v2 GIDs at indexes %v", p.RoCEv2GIDs),
				Read:    []string{fmt.Sprintf("sysfs class/infiniband/%s/ports/%d/gid_attrs/types/* and gids/*", x.RDMA, p.Num)}}
			switch {
			case len(p.RoCEv2GIDs) == 0:
				c.Status = Fail
				c.Summary = "no RoCE v2 GID: RoCE v2 (routable RoCE, what NCCL uses) has no address to send from"
				c.Fix = fmt.Sprintf("bring %s up and give it an IP address (RoCE v2 GIDs appear once the netdev has one in the RDMA device's namespace)", orDash(x.Netdev))
			case len(p.RoutableRoCEv2GIDs) == 0:
				c.Status = Fail
				c.Summary = fmt.Sprintf("only link-local RoCE v2 GIDs (indexes %v, fe80::): RoCE v2 cannot route them and NCCL looks for an IPv4 one by default", p.RoCEv2GIDs)
				c.Fix = fmt.Sprintf("give %s an IPv4 (or global IPv6) address in the RDMA device's namespace", orDash(x.Netdev))
			default:
				c.Summary = fmt.Sprintf("routable RoCE v2 GIDs at indexes %v", p.RoutableRoCEv2GIDs)
			}
			out = append(out, c)
		}
	}
	return out
}

// RoCEActiveMTU is the RDMA MTU the kernel derives from a RoCE netdev's MTU
// (iboe_get_mtu): the MTU less the RoCE headers (GRH 40, UDP 8, BTH 12,
// XRC 4, AtomicETH 28, ICRC 4 bytes), rounded down to an IB MTU.
func RoCEActiveMTU(netdevMTU int) int {
	m := netdevMTU - (40 + 8 + 12 + 4 + 28 + 4)
	for _, ib := range []int{4096, 2048, 1024, 512, 256} {
		if m >= ib {
			return ib
		}
	}
	return 0
}

func (n *node) mtus(context.Context) []Check {
	var out []Check
	for _, x := range n.topo.NICs {
		if x.Netdev == "" {
			continue
		}
		mtu, err := n.fs.NetdevMTU(x.Netdev)
		c := Check{ID: "mtu", Subject: x.Netdev, Status: OK, Read: []string{fmt.Sprintf("sysfs class/net/%s/mtu: %d", x.Netdev, mtu)}}
		switch {
		case err != nil:
			c.Status, c.Summary, c.Read = Skip, "cannot read the netdev's MTU: "+err.Error(), nil
		case x.LinkLayer == v1alpha1.LinkLayerEthernet:
			active := RoCEActiveMTU(mtu)
			c.Summary = fmt.Sprintf("netdev MTU %d gives RoCE active_mtu %d", mtu, active)
			if active < 4096 {
				c.Status = Warn
				c.Fix = fmt.Sprintf("ip link set %s mtu 9000 (and the switch ports): RoCE needs a netdev MTU of at least 4192 for a 4096-byte RDMA MTU", x.Netdev)
			}
		case mtu <= 4092:
			// IPoIB datagram mode: the netdev MTU is the port's IB MTU less
			// the 4-byte IPoIB header.
			c.Summary = fmt.Sprintf("IPoIB MTU %d: the port's MTU is %d", mtu, mtu+4)
			if mtu+4 < 4096 {
				c.Status = Warn
				c.Fix = "raise the partition's MTU on the subnet manager (OpenSM partitions.conf: mtu=5 for 4096) and the HCA's port MTU"
			}
		default:
			c.Summary = fmt.Sprintf("IPoIB MTU %d (connected mode)", mtu)
		}
		out = append(out, c)
	}
	return out
}

func (n *node) sriov(context.Context) []Check {
	var out []Check
	for _, x := range n.topo.NICs {
		pf := n.policyPF(x)
		c := Check{ID: "sriov", Subject: x.PCI, Status: OK,
			Read: []string{fmt.Sprintf("sysfs bus/pci/devices/%s/{sriov_totalvfs,sriov_numvfs,virtfn*}: %d, %d, %d VFs", x.PCI, x.TotalVFs, x.NumVFs, len(x.VFs))}}
		switch {
		case pf == nil && x.TotalVFs == 0:
			continue
		case pf == nil:
			c.Summary = fmt.Sprintf("%d of %d VFs (no policy names this PF)", x.NumVFs, x.TotalVFs)
		case pf.NumVFs > 0 && x.TotalVFs == 0:
			c.Status, c.Summary = Fail, fmt.Sprintf("the policy wants %d VFs but SR-IOV is off", pf.NumVFs)
			c.Fix = fmt.Sprintf("enable SR-IOV in the BIOS and the firmware: mlxconfig -d %s set SRIOV_EN=1 NUM_OF_VFS=%d, then reboot", x.PCI, pf.NumVFs)
		case x.NumVFs != pf.NumVFs || len(x.VFs) != pf.NumVFs:
			c.Status, c.Summary = Fail, fmt.Sprintf("%d VFs, the policy wants %d", len(x.VFs), pf.NumVFs)
			c.Fix = "railyard node apply --policy FILE"
		default:
			c.Summary = fmt.Sprintf("%d VFs as the policy says", x.NumVFs)
		}
		out = append(out, c)
	}
	return out
}

// vfGUIDs checks that InfiniBand VFs have non-zero, unique node GUIDs.
func (n *node) vfGUIDs(context.Context) []Check {
	var out []Check
	owner := map[[8]byte]string{}
	for _, x := range n.topo.NICs {
		if x.LinkLayer != v1alpha1.LinkLayerInfiniBand || len(x.VFs) == 0 {
			continue
		}
		c := Check{ID: "vf-guids", Subject: x.RDMA, Status: OK}
		var zero, dup, unread []string
		read := 0
		for _, v := range x.VFs {
			if v.RDMA == "" {
				unread = append(unread, fmt.Sprintf("VF %d (%s, driver %s)", v.Index, v.PCI, orDash(v.Driver)))
				continue
			}
			g, err := n.fs.NodeGUID(v.RDMA)
			if err != nil {
				unread = append(unread, fmt.Sprintf("VF %d (%s): %v", v.Index, v.RDMA, err))
				continue
			}
			read++
			switch prev, seen := owner[g]; {
			case g == [8]byte{}:
				zero = append(zero, fmt.Sprintf("VF %d (%s)", v.Index, v.RDMA))
			case seen:
				dup = append(dup, fmt.Sprintf("VF %d (%s) has the GUID of %s", v.Index, v.RDMA, prev))
			default:
				owner[g] = v.RDMA
			}
		}
		c.Read = []string{fmt.Sprintf("sysfs class/infiniband/<vf>/node_guid of %d VFs of %s", read, x.RDMA)}
		c.Summary = fmt.Sprintf("%d VFs with non-zero, unique GUIDs", read)
		if len(unread) > 0 {
			c.Read = append(c.Read, "not readable on the host (vfio-pci or no RDMA device): "+strings.Join(unread, ", "))
		}
		if len(zero)+len(dup) > 0 {
			c.Status = Fail
			c.Summary = strings.Join(slices.Concat(prefix("zero GUID: ", zero), dup), "; ")
			c.Fix = "railyard node apply --policy FILE (guids: derived) sets unique GUIDs; the subnet manager refuses zero and duplicate GUIDs, so these VFs stay DOWN or clash"
		}
		out = append(out, c)
	}
	return out
}

func prefix(p string, s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return []string{p + strings.Join(s, ", ")}
}

// bridgesBetween returns the bridges on the PCI path from a to b below
// their lowest common bridge, and that bridge.
func (n *node) bridgesBetween(a, b string) []string {
	up := func(addr string) []string {
		var chain []string
		for d, ok := n.topo.Device(addr); ok && d.Parent != ""; d, ok = n.topo.Device(d.Parent) {
			chain = append(chain, d.Parent)
		}
		return chain
	}
	ca, cb := up(a), up(b)
	var out []string
	for _, x := range ca {
		out = append(out, x)
		if slices.Contains(cb, x) {
			for _, y := range cb {
				if y == x {
					break
				}
				out = append(out, y)
			}
			return out
		}
	}
	return nil // no common bridge: the path crosses the host bridge
}

// pkeys checks that the VFs of a PF whose policy names a pkey have it in
// their port's pkey table: the subnet manager adds it once their GUIDs are
// members of the partition.
func (n *node) pkeys(context.Context) []Check {
	var out []Check
	for _, x := range n.topo.NICs {
		pf := n.policyPF(x)
		if pf == nil || pf.PKey == "" || x.LinkLayer != v1alpha1.LinkLayerInfiniBand {
			continue
		}
		want, err := v1alpha1.ParsePKey(pf.PKey)
		if err != nil {
			continue
		}
		c := Check{ID: "pkey", Subject: x.RDMA, Status: OK, Read: []string{fmt.Sprintf("sysfs class/infiniband/<vf>/ports/1/pkeys/* of the VFs of %s", x.RDMA)}}
		var missing []string
		for _, v := range x.VFs {
			if v.RDMA == "" {
				continue
			}
			keys, _ := n.fs.PortPKeys(v.RDMA, 1)
			if !slices.ContainsFunc(keys, func(k uint16) bool { return k&0x7fff == want&0x7fff }) {
				missing = append(missing, fmt.Sprintf("VF %d (%s)", v.Index, v.RDMA))
			}
		}
		c.Summary = fmt.Sprintf("every VF has pkey %#04x", want)
		if len(missing) > 0 {
			c.Status = Warn
			c.Summary = fmt.Sprintf("pkey %#04x missing on %s", want, strings.Join(missing, ", "))
			c.Fix = "add the VFs' GUIDs to the partition on the subnet manager: railyard node apply prints the OpenSM partitions.conf line"
		}
		out = append(out, c)
	}
	return out
}
