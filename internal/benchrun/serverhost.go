package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

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

// claimAddressWait bounds how long a client waits, once its server runs,
// for the server's ResourceClaims to record an address (status.devices
// networkData): railyard-cni attaches the claimed NIC as the pod's sandbox
// starts, and the agent writes the claim's status right after it
// (retrying), so the address normally follows the pod's IP within a poll
// or two.
const claimAddressWait = 30 * time.Second

// serverHost is the address a client reaches server at, where it came
// from, and whether it is final (false: wait, the server's claims may
// still record an address). A run over a secondary network measures that
// network, so its client is sent, in this order, to:
//
//  1. the first address on a secondary network in the server's Multus
//     network-status, when it asked for networks
//     (benchplan.NetworksAnnotation);
//  2. the first address its ResourceClaims record (status.devices
//     networkData, KEP-4817), when it has claims: its rails delivered by
//     DRA with no Multus, attached by the runtime's chained CNI
//     configuration. Claims that record none after claimAddressWait
//     (running tells how long the server has run) are given up on;
//  3. the pod's IP, and via says why.
func serverHost(ctx context.Context, c Cluster, server *corev1.Pod, running time.Duration) (host, via string, final bool) {
	host, via = server.Status.PodIP, "the server pod's IP (pod network)"
	var why []string
	if server.Annotations[benchplan.NetworksAnnotation] != "" {
		ip, detail, ok := multusAddress(server)
		if ok {
			return ip, detail, true
		}
		why = append(why, detail)
	}
	if len(server.Spec.ResourceClaims) > 0 {
		ip, detail, ok := claimAddress(ctx, c, server)
		switch {
		case ok:
			return ip, detail, true
		case running < claimAddressWait:
			return "", "", false
		}
		why = append(why, fmt.Sprintf("%s after %v", detail, claimAddressWait))
	}
	if len(why) > 0 {
		via += ": " + strings.Join(why, "; ") + ", so this run crosses the pod network"
	}
	return host, via, true
}

// multusAddress is the first address on a secondary network in server's
// network-status; otherwise why not.
func multusAddress(server *corev1.Pod) (ip, detail string, ok bool) {
	raw := server.Annotations[NetworkStatusAnnotation]
	if raw == "" {
		return "", "the server asked for secondary networks but has no " + NetworkStatusAnnotation + " annotation (no Multus?)", false
	}
	var st []networkStatus
	if len(raw) > maxNetworkStatus || json.Unmarshal([]byte(raw), &st) != nil {
		return "", "the server's " + NetworkStatusAnnotation + " does not decode", false
	}
	for _, n := range st {
		if n.Default {
			continue
		}
		for _, ip := range n.IPs {
			if net.ParseIP(ip) != nil {
				return ip, fmt.Sprintf("the server's %s on %s (network %s, from its %s)", ip, n.Interface, n.Name, NetworkStatusAnnotation), true
			}
		}
	}
	return "", "the server's " + NetworkStatusAnnotation + " lists no address on a secondary network", false
}

// claimAddress is the first address server's allocated claims record in
// their status.devices networkData (an IP in CIDR form, as KEP-4817 has
// it, or a bare IP); otherwise why not.
func claimAddress(ctx context.Context, c Cluster, server *corev1.Pod) (ip, detail string, ok bool) {
	var names []string
	for _, s := range server.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			names = append(names, *s.ResourceClaimName)
		}
	}
	if len(names) == 0 {
		return "", "the server's claims are not in its status (resourceClaimStatuses) yet", false
	}
	var errs []string
	for _, name := range names {
		claim, err := c.GetClaim(ctx, server.Namespace, name)
		if err != nil {
			errs = append(errs, fmt.Sprintf("claim %s: %v", name, err))
			continue
		}
		for _, d := range claim.Status.Devices {
			if d.NetworkData == nil {
				continue
			}
			for _, a := range d.NetworkData.IPs {
				addr := net.ParseIP(a)
				if p, _, err := net.ParseCIDR(a); err == nil {
					addr = p
				}
				if addr != nil {
					return addr.String(), fmt.Sprintf("the server's %s on %s (device %s of its claim %s, from the claim's status.devices networkData)",
						addr, d.NetworkData.InterfaceName, d.Device, name), true
				}
			}
		}
	}
	if len(errs) > 0 {
		return "", "the server's claims could not be read (" + strings.Join(errs, "; ") + ")", false
	}
	return "", fmt.Sprintf("the server's claims (%s) record no address in status.devices networkData (no NIC attached by railyard-cni?)", strings.Join(names, ", ")), false
}
