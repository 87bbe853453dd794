package containerdev

import (
	"path/filepath"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// Dir is where RDMA device nodes appear in a container, and (below the
// host's dev root) where they are on the host.
const Dir = "/dev/infiniband"

// RDMACM is the name of the RDMA connection manager's node, shared by
// every device of the node.
const RDMACM = "rdma_cm"

// Options select a device's optional nodes; its own verbs node is always
// given.
type Options struct {
	// RDMACM gives /dev/infiniband/rdma_cm, UMAD the port's umadN, ISSM
	// the port's issmN.
	RDMACM, UMAD, ISSM bool
}

// NewOptions is the one reading of a pool's deviceNodes: rdma_cm is given
// unless it is set off (nil is on), umad and issm only when asked.
func NewOptions(rdmaCM *bool, umad, issm bool) Options {
	return Options{RDMACM: rdmaCM == nil || *rdmaCM, UMAD: umad, ISSM: issm}
}

// Nodes are a device's char devices (names under Dir) in the order a
// container gets them: its verbs node ("uverbs3"), then rdma_cm, umad and
// issm as o asks. An empty name (a device without a verbs node, a port
// without umad) is left out; callers that need the verbs node check it.
func (o Options) Nodes(uverbs, umad, issm string) []string {
	var out []string
	add := func(on bool, name string) {
		if on && name != "" {
			out = append(out, name)
		}
	}
	add(true, uverbs)
	add(o.RDMACM, RDMACM)
	add(o.UMAD, umad)
	add(o.ISSM, issm)
	return out
}

// ContainerPath is a node's path in the container ("/dev/infiniband/uverbs3").
func ContainerPath(node string) string { return Dir + "/" + node }

// HostPath is a node's path on the host, below devRoot (the host's /dev).
func HostPath(devRoot, node string) string {
	return filepath.Join(devRoot, strings.TrimPrefix(Dir, "/dev/"), node)
}

// Kind is what a node is in a device's _INFO entry: "uverbs", "umad",
// "issm" (the name without its number) or "rdma_cm".
func Kind(node string) string { return strings.TrimRight(node, "0123456789") }

// CDINodes are the CDI device nodes of a device's nodes, each at the same
// path in the container as under devRoot on the host. Type, major and
// minor are left out: the CDI library fills them from the host path when
// it injects the device.
func CDINodes(devRoot string, nodes []string) []*cdispec.DeviceNode {
	out := make([]*cdispec.DeviceNode, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, &cdispec.DeviceNode{Path: ContainerPath(n), HostPath: HostPath(devRoot, n), Permissions: "rw"})
	}
	return out
}
