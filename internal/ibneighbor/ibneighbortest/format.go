package ibneighbortest

import (
	"fmt"
	"strings"
)

// These write smpquery's output as libibmad prints it (rdma-core
// libibmad/fields.c _mad_dump_field: the name, ":", dots to column 33 and
// the value; infiniband-diags/smpquery.c node_info and node_desc). The
// ibneighbor tests check them against hand-written outputs.

// Field is one dumped field line.
func Field(name, value string) string {
	return name + ":" + strings.Repeat(".", max(32-len(name), 0)) + value + "\n"
}

// Node is the NodeInfo of a node at hop 1, with the values a ConnectX or
// Quantum device reports.
type Node struct {
	// Type is "Switch", "Channel Adapter" or "Router".
	Type      string
	GUID      uint64
	NumPorts  int
	LocalPort int
}

// NodeInfo is `smpquery -D nodeinfo 0,1`'s output for n.
func NodeInfo(n Node) string {
	devID, partCap := "0xcf08", "8" // Quantum (HDR) switch
	if n.Type != "Switch" {
		devID, partCap = "0x101b", "128" // ConnectX-6
	}
	guid := fmt.Sprintf("0x%016x", n.GUID)
	return "# Node info: DR path slid 65535; dlid 65535; 0,1\n" +
		Field("BaseVers", "1") +
		Field("ClassVers", "1") +
		Field("NodeType", n.Type) +
		Field("NumPorts", fmt.Sprint(n.NumPorts)) +
		Field("SystemGuid", guid) +
		Field("Guid", guid) +
		Field("PortGuid", guid) +
		Field("PartCap", partCap) +
		Field("DevId", devID) +
		Field("Revision", "0x000000a0") +
		Field("LocalPort", fmt.Sprint(n.LocalPort)) +
		Field("VendorId", "0x0002c9")
}

// NodeDesc is `smpquery -D nodedesc 0,1`'s output for a description.
func NodeDesc(desc string) string {
	dots := "."
	if len(desc) < 32 {
		dots = strings.Repeat(".", 32-len(desc))
	}
	return "Node Description:" + dots + desc + "\n"
}

// PortInfo is the beginning of `smpquery -D portinfo 0 <port>`'s output
// for the local port in the given link states ("Down", "Polling"): the
// fields up to the link states, a capability mask's continuation lines
// among them.
func PortInfo(port int, linkState, physState string) string {
	return fmt.Sprintf("# Port info: DR path slid 65535; dlid 65535; 0 port %d\n", port) +
		Field("Mkey", "<not displayed>") +
		Field("GidPrefix", "0xfe80000000000000") +
		Field("Lid", "0") +
		Field("SMLid", "0") +
		Field("CapMask", "0xa651e848") +
		"\t\t\t\tIsTrapSupported\n\t\t\t\tIsAutomaticMigrationSupported\n\t\t\t\tIsSLMappingSupported\n" +
		Field("DiagCode", "0x0000") +
		Field("MkeyLeasePeriod", "0") +
		Field("LocalPort", fmt.Sprint(port)) +
		Field("LinkWidthEnabled", "1X or 4X") +
		Field("LinkWidthSupported", "1X or 4X") +
		Field("LinkWidthActive", "4X") +
		Field("LinkSpeedSupported", "2.5 Gbps or 5.0 Gbps or 10.0 Gbps") +
		Field("LinkState", linkState) +
		Field("PhysLinkState", physState) +
		Field("LinkDownDefState", "Polling")
}
