//go:build e2e

package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// kubeProxyOptions is one node's kube-proxy: Service routing (ClusterIP
// and NodePort) in the node's network namespace, in nftables mode.
type kubeProxyOptions struct {
	BinDir      string
	Kubeconfig  string
	NodeName    string
	NodeIP      string
	ClusterCIDR string // every node's pod CIDR: traffic from outside it to a Service is masqueraded
	Dir         string // where its configuration file goes
	LogPath     string
	Enter       []string // nsenter prefix: the node's mount, net and PID namespaces
}

// kubeProxyHealthzPort is kube-proxy's default health port, on the node's IP.
const kubeProxyHealthzPort = 10256

// config is a KubeProxyConfiguration. It leaves the conntrack sysctls
// alone (maxPerCore and the TCP timeouts at 0): they are the host's, not
// the node's, on a kernel where a network namespace cannot own them.
func (o kubeProxyOptions) config() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
mode: nftables
hostnameOverride: %q
bindAddress: %q
clusterCIDR: %q
healthzBindAddress: %q
metricsBindAddress: "127.0.0.1:10249"
nodePortAddresses: [%q]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, o.Kubeconfig, o.NodeName, o.NodeIP, o.ClusterCIDR,
		net.JoinHostPort(o.NodeIP, strconv.Itoa(kubeProxyHealthzPort)), o.NodeIP+"/32")
}

// startKubeProxy starts kube-proxy and waits until its health endpoint
// says it has programmed the node's rules at least once.
func startKubeProxy(ctx context.Context, o kubeProxyOptions) (*Process, error) {
	cfg := filepath.Join(o.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(o.config()), 0o644); err != nil {
		return nil, fmt.Errorf("kube-proxy %s: %w", o.NodeName, err)
	}
	path, args := entered(o.Enter, filepath.Join(o.BinDir, "kube-proxy"), []string{"--config", cfg, "--v=1"})
	proc, err := startProcess("kube-proxy", path, args, nil, o.LogPath)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(o.NodeIP, strconv.Itoa(kubeProxyHealthzPort)) + "/healthz"
	if err := proc.waitFor(wctx, "kube-proxy healthy", 200*time.Millisecond, func(ctx context.Context) error {
		return httpOK(ctx, hc, url)
	}); err != nil {
		_ = proc.Kill()
		return nil, fmt.Errorf("kube-proxy %s: %w", o.NodeName, err)
	}
	return proc, nil
}
