package benchrun

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/railyard-io/railyard/internal/benchplan"
)

// The client of a run over the secondary network reaches its server on
// that network's address from the server's network-status (Multus), not
// on the pod IP, which would measure the pod network; where that cannot be
// known the pod IP is used and the run says why.
func TestServerHostPrefersTheSecondaryNetworksAddress(t *testing.T) {
	const multus = `[{"name":"cbr0","interface":"eth0","ips":["10.217.0.9"],"default":true},` +
		`{"name":"railyard-system/rail0","interface":"net1","ips":["10.60.0.3"],"mac":"02:00:00:00:00:01","dns":{}}]`
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		host, via   string
	}{
		{"pod network run", nil, "10.217.0.9", "pod's IP (pod network)"},
		{"secondary network with its status", map[string]string{benchplan.NetworksAnnotation: "railyard-system/rail0", NetworkStatusAnnotation: multus},
			"10.60.0.3", "10.60.0.3 on net1 (network railyard-system/rail0"},
		{"no network-status", map[string]string{benchplan.NetworksAnnotation: "rail0"}, "10.217.0.9", "no Multus?"},
		{"garbled network-status", map[string]string{benchplan.NetworksAnnotation: "rail0", NetworkStatusAnnotation: "[{"}, "10.217.0.9", "does not decode"},
		{"only the default network", map[string]string{benchplan.NetworksAnnotation: "rail0",
			NetworkStatusAnnotation: `[{"name":"cbr0","interface":"eth0","ips":["10.217.0.9"],"default":true}]`}, "10.217.0.9", "lists no address on a secondary network"},
		{"a bad address is skipped", map[string]string{benchplan.NetworksAnnotation: "rail0",
			NetworkStatusAnnotation: `[{"name":"rail0","interface":"net1","ips":["not-an-ip","fd00::3"]}]`}, "fd00::3", "fd00::3 on net1"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "server", Annotations: tc.annotations}, Status: corev1.PodStatus{PodIP: "10.217.0.9"}}
		host, via, final := serverHost(context.Background(), Kube{Client: fake.NewClientset()}, p, 0)
		if host != tc.host || !strings.Contains(via, tc.via) || !final {
			t.Errorf("%s: %s, %q, final %v; want %s, %q, final", tc.name, host, via, final, tc.host, tc.via)
		}
	}
}

// A server whose rails are delivered by DRA, with no Multus, is reached on
// the address its claim's status.devices networkData records (written by
// the agent once railyard-cni attached the NIC). While the claim records
// none the client waits, up to claimAddressWait after the server started
// running; then it falls back to the pod IP and says why. The claims come
// from client-go's fake clientset.
func TestServerHostFromTheClaimsNetworkData(t *testing.T) {
	claim := func(name string, ips ...string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if ips != nil {
			c.Status.Devices = []resourceapi.AllocatedDeviceStatus{
				{Driver: "rdma.railyard.io", Pool: "gpu-1", Device: "gpu-rail0"},
				{Driver: "rdma.railyard.io", Pool: "gpu-1", Device: "0000-1a-00-0", NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: "eth1", IPs: ips}},
			}
		}
		return c
	}
	const multus = `[{"name":"cbr0","interface":"eth0","ips":["10.217.0.9"],"default":true},{"name":"rail0","interface":"net1","ips":["10.61.0.3"]}]`
	for _, tc := range []struct {
		name        string
		claims      []runtime.Object
		statuses    []string // the pod's resourceClaimStatuses' claim names
		annotations map[string]string
		running     time.Duration
		host, via   string
		final       bool
	}{
		{name: "address in CIDR form", claims: []runtime.Object{claim("server-rails-x", "10.60.0.1/24")}, statuses: []string{"server-rails-x"},
			host: "10.60.0.1", via: "10.60.0.1 on eth1 (device 0000-1a-00-0 of its claim server-rails-x", final: true},
		{name: "bare IPv6 address, a bad one skipped", claims: []runtime.Object{claim("c", "garbage", "fd00::3")}, statuses: []string{"c"},
			host: "fd00::3", via: "fd00::3 on eth1", final: true},
		{name: "the second claim has it", claims: []runtime.Object{claim("gpus"), claim("rails", "10.60.0.2/24")}, statuses: []string{"gpus", "rails"},
			host: "10.60.0.2", via: "of its claim rails", final: true},
		{name: "Multus status first", claims: []runtime.Object{claim("c", "10.60.0.1/24")}, statuses: []string{"c"},
			annotations: map[string]string{benchplan.NetworksAnnotation: "rail0", NetworkStatusAnnotation: multus}, host: "10.61.0.3", via: "network rail0", final: true},
		{name: "networks asked, no Multus: the claim's address", claims: []runtime.Object{claim("c", "10.60.0.1/24")}, statuses: []string{"c"},
			annotations: map[string]string{benchplan.NetworksAnnotation: "rail0"}, host: "10.60.0.1", via: "from the claim's status.devices networkData", final: true},
		{name: "no address yet: wait", claims: []runtime.Object{claim("c")}, statuses: []string{"c"}, running: time.Second},
		{name: "no claim status yet: wait", running: claimAddressWait - time.Second},
		{name: "no address after the wait: the pod IP, and why", claims: []runtime.Object{claim("c")}, statuses: []string{"c"}, running: claimAddressWait,
			host: "10.217.0.9", via: "claims (c) record no address in status.devices networkData (no NIC attached by railyard-cni?) after 30s, so this run crosses the pod network", final: true},
		{name: "claim gone after the wait", statuses: []string{"gone"}, running: time.Minute,
			host: "10.217.0.9", via: "claims could not be read (claim gone:", final: true},
		{name: "no Multus and no address: both reasons", claims: []runtime.Object{claim("c")}, statuses: []string{"c"}, running: time.Minute,
			annotations: map[string]string{benchplan.NetworksAnnotation: "rail0"}, host: "10.217.0.9", via: "(no Multus?); the server's claims (c) record no address", final: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "server", Annotations: tc.annotations},
				Spec:   corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "rails"}}},
				Status: corev1.PodStatus{PodIP: "10.217.0.9"}}
			for _, n := range tc.statuses {
				p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: "rails", ResourceClaimName: &n})
			}
			host, via, final := serverHost(context.Background(), Kube{Client: fake.NewClientset(tc.claims...)}, p, tc.running)
			if host != tc.host || !strings.Contains(via, tc.via) || final != tc.final {
				t.Errorf("got %q, %q, final %v; want %q, %q, final %v", host, via, final, tc.host, tc.via, tc.final)
			}
		})
	}
}
