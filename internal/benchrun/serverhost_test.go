package benchrun

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		host, via := serverHost(p)
		if host != tc.host || !strings.Contains(via, tc.via) {
			t.Errorf("%s: %s, %q; want %s, %q", tc.name, host, via, tc.host, tc.via)
		}
	}
}
