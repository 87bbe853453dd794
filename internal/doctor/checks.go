package doctor

import "context"

// checkRow is one row of the table of checks: the ids its lines carry
// (Check.ID), one line saying what it checks, and the function that
// makes them.
type checkRow struct {
	ids  []string
	line string
	run  func(*node, context.Context) []Check
}

// table is every check, in the order Run runs them and reports list them.
// It is the one list: Run runs it, `railyard doctor --help` prints it
// (Checks), and tests hold doc.go and docs/doctor.md to it.
var table = [...]checkRow{
	{[]string{"gpus", "nics"}, "GPUs and RDMA NICs present", (*node).devices},
	{[]string{"policy-pf"}, "each PF of the node policy (--policy) is an RDMA NIC of the node", (*node).policyPFs},
	{[]string{"gpu-nic"}, "a NIC within PXB of every GPU", (*node).pairs},
	{[]string{"pcie-link"}, "each GPU's and NIC's PCIe link, and every bridge's above it, trained at its capability", (*node).pcieLinks},
	{[]string{"ports"}, "RDMA ports ACTIVE and LinkUp", (*node).ports},
	{[]string{"rdma-errors"}, "each PF port's error counters, read twice --counter-window apart: link errors or exhausted transport retries that rose fail, retransmissions and link errors since boot warn", (*node).rdmaErrors},
	{[]string{"link-layer"}, "each PF's link layer as the node policy says", (*node).linkLayers},
	{[]string{"roce-gid"}, "a routable RoCE v2 GID on each Ethernet port", (*node).roceGIDs},
	{[]string{"roce-qos", "roce-qos-consistent", "roce-dscp", "roce-dscp-consistent"}, "each RoCE NIC's lossless configuration (PFC on RoCE's priority, trust mode, ECN) and each RoCE port's DSCP traffic class, as the fabric's profile and the policy's qos say, alike across the node", (*node).roceQoS},
	{[]string{"firmware"}, "NIC firmware alike per model, and none the firmware policy refuses (--firmware-minimum, --refuse-known-issue)", (*node).firmware},
	{[]string{"mtu"}, "netdev MTU against the RDMA MTU", (*node).mtus},
	{[]string{"sriov"}, "SR-IOV VF counts against the node policy", (*node).sriov},
	{[]string{"vf-guids"}, "InfiniBand VF GUIDs non-zero and unique", (*node).vfGUIDs},
	{[]string{"pkey"}, "VF pkey tables hold the node policy's pkey", (*node).pkeys},
	{[]string{"rdma-netns"}, "the RDMA subsystem's netns mode exclusive", (*node).rdmaNetns},
	{[]string{"memlock"}, "the container runtime's memlock limit unlimited", (*node).memlock},
	{[]string{"gpudirect"}, "GPUDirect RDMA: nvidia_peermem or DMA-BUF", (*node).gpuDirect},
	{[]string{"acs"}, "PCIe ACS off on the bridges between each GPU and its NIC (needs root)", (*node).acs},
	{[]string{"iommu"}, "no DMA translation for the GPUs' and NICs' IOMMU groups", (*node).iommu},
}

// CheckInfo is what a check is: the ids of its report lines and one line
// saying what it checks.
type CheckInfo struct {
	IDs  []string
	Line string
}

// Checks returns every check, in the order Run runs them.
func Checks() []CheckInfo {
	out := make([]CheckInfo, 0, len(table))
	for _, r := range table {
		out = append(out, CheckInfo{IDs: append([]string(nil), r.ids...), Line: r.line})
	}
	return out
}
