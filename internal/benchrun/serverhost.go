package benchrun

import (
	"encoding/json"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/benchplan"
)

// NetworkStatusAnnotation is where Multus (and other meta-plugins that
// follow the Network Plumbing Working Group's spec) write each attached
// network's interface and addresses on the pod.
const NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

// maxNetworkStatus bounds the annotation read (the API server bounds all
// annotations to 256 KiB).
const maxNetworkStatus = 256 << 10

type networkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	Default   bool     `json:"default"`
}

// serverHost is the address a client reaches server at, and where it
// came from. A server that asked for secondary networks
// (benchplan.NetworksAnnotation) is reached on the first one's first
// address, as its network-status says, so a run over the RDMA network
// measures that network; without a network-status (no Multus), or for a
// pod-network run, the pod's IP, and via says so.
func serverHost(server *corev1.Pod) (host, via string) {
	host, via = server.Status.PodIP, "the server pod's IP (pod network)"
	if server.Annotations[benchplan.NetworksAnnotation] == "" {
		return host, via
	}
	raw := server.Annotations[NetworkStatusAnnotation]
	if raw == "" {
		return host, via + ": the server asked for secondary networks but has no " + NetworkStatusAnnotation + " annotation (no Multus?), so this run crosses the pod network"
	}
	var st []networkStatus
	if len(raw) > maxNetworkStatus || json.Unmarshal([]byte(raw), &st) != nil {
		return host, via + ": the server's " + NetworkStatusAnnotation + " does not decode, so this run crosses the pod network"
	}
	for _, n := range st {
		if n.Default {
			continue
		}
		for _, ip := range n.IPs {
			if net.ParseIP(ip) != nil {
				return ip, fmt.Sprintf("the server's %s on %s (network %s, from its %s)", ip, n.Interface, n.Name, NetworkStatusAnnotation)
			}
		}
	}
	return host, via + ": the server's " + NetworkStatusAnnotation + " lists no address on a secondary network, so this run crosses the pod network"
}
