//go:build e2e

package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// serviceCIDR is the clusters' Service range. Its first address,
// kubernetesServiceIP, is the `kubernetes` Service's ClusterIP: in-cluster
// clients (the chart's DRA plugin) dial it, so the multi-node cluster's
// apiserver certificate names it.
const (
	serviceCIDR         = "10.0.0.0/24"
	kubernetesServiceIP = "10.0.0.1"
)

// freePorts asks the kernel for n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	// Hold every listener until all are chosen so the ports differ.
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func startEtcd(ctx context.Context, dir string, clientPort, peerPort int, logPath string) (*Process, error) {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	args := []string{
		"--name", "e2e",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e2e=" + peer,
		"--unsafe-no-fsync",
		"--log-level", "warn",
	}
	proc, err := startProcess("etcd", "etcd", args, []string{"ETCD_UNSUPPORTED_ARCH="}, logPath)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	err = proc.waitFor(wctx, "etcd healthy", 100*time.Millisecond, func(ctx context.Context) error {
		return httpOK(ctx, hc, client+"/health")
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}

type apiserverOptions struct {
	BinDir     string
	Dir        string
	PKI        *pki
	EtcdPort   int
	SecurePort int
	LogPath    string
	// BindAddress is where it listens and what it advertises (default
	// 127.0.0.1); a multi-node cluster uses its bridge address, which the
	// nodes' network namespaces reach.
	BindAddress string
	// ServiceAccountAdmission turns the ServiceAccount admission plugin on
	// (needs the controller manager's token and service account
	// controllers); the single-node cluster, without them, turns it off.
	ServiceAccountAdmission bool
	// EndpointRouting makes the apiserver call a webhook's (or an
	// aggregated API's) Service at one of its endpoints' addresses
	// (--enable-aggregator-routing) instead of its ClusterIP: the apiserver
	// runs on the host, where no kube-proxy routes ClusterIPs, but the host
	// routes every node's pod CIDR (setupNetwork).
	EndpointRouting bool
	// Extra are more flags (feature gates, runtime config).
	Extra []string
}

func startAPIServer(ctx context.Context, o apiserverOptions) (*Process, error) {
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	admission := []string{"--disable-admission-plugins", "ServiceAccount"}
	if o.ServiceAccountAdmission {
		admission = []string{"--enable-admission-plugins", "ServiceAccount"}
	}
	args := []string{
		"--etcd-servers", "http://127.0.0.1:" + strconv.Itoa(o.EtcdPort),
		"--bind-address", o.BindAddress,
		"--advertise-address", o.BindAddress,
		"--secure-port", strconv.Itoa(o.SecurePort),
		"--tls-cert-file", o.PKI.CertFile,
		"--tls-private-key-file", o.PKI.KeyFile,
		"--cert-dir", filepath.Join(o.Dir, "apiserver-certs"),
		"--token-auth-file", o.PKI.TokensFile,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", o.PKI.SAPubFile,
		"--service-account-signing-key-file", o.PKI.SAKeyFile,
		"--service-cluster-ip-range", serviceCIDR,
		admission[0], admission[1],
		"--allow-privileged=true",
		"--enable-aggregator-routing=" + strconv.FormatBool(o.EndpointRouting),
		// The node's hostname is not resolvable: reach the kubelet by IP.
		"--kubelet-preferred-address-types", "InternalIP",
		"--profiling=false",
		"--v=1",
	}
	args = append(args, o.Extra...)
	proc, err := startProcess("kube-apiserver", filepath.Join(o.BinDir, "kube-apiserver"), args, nil, o.LogPath)
	if err != nil {
		return nil, err
	}
	hc, err := tlsClient(o.PKI.CAPEM)
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	url := fmt.Sprintf("https://%s:%d/readyz", o.BindAddress, o.SecurePort)
	err = proc.waitFor(wctx, "kube-apiserver ready", 200*time.Millisecond, func(ctx context.Context) error {
		return httpOKWithToken(ctx, hc, url, o.PKI.AdminToken)
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}

// startScheduler starts kube-scheduler; extra are more flags (feature
// gates).
func startScheduler(ctx context.Context, binDir, kubeconfig string, port int, logPath string, extra ...string) (*Process, error) {
	args := []string{
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--leader-elect=false",
		"--v=2",
	}
	args = append(args, extra...)
	proc, err := startProcess("kube-scheduler", filepath.Join(binDir, "kube-scheduler"), args, nil, logPath)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// The scheduler serves a self-signed certificate it made itself.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local health probe only
	}}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	err = proc.waitFor(wctx, "kube-scheduler healthy", 200*time.Millisecond, func(ctx context.Context) error {
		return httpOK(ctx, hc, url)
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}

func tlsClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("tls client: bad CA PEM")
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}, nil
}

func httpOK(ctx context.Context, hc *http.Client, url string) error {
	return httpOKWithToken(ctx, hc, url, "")
}

func httpOKWithToken(ctx context.Context, hc *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// controllers are the kube-controller-manager controllers a multi-node
// cluster runs: what a chart install, a Deployment, namespace deletion,
// service account tokens (the ServiceAccount admission plugin needs the
// account and kube-root-ca.crt in every namespace), ResourceClaims made
// from templates, Services (the EndpointSlices kube-proxy routes to) and
// batch Jobs need. The node lifecycle controller is left out: on two
// loaded cores it would mark a slow node NotReady and evict its pods.
// The device taint eviction controller runs where its feature gate
// (DRADeviceTaints) is on by default, from 1.36 (GA in 1.37): it evicts the
// pods of a device tainted NoExecute; 1.35's controller manager skips it
// (gate off).
var controllers = []string{
	"daemonset-controller",
	"replicaset-controller",
	"deployment-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"resourceclaim-controller",
	"device-taint-eviction-controller",
	"endpointslice-controller",
	"job-controller",
}

// startControllerManager starts kube-controller-manager with the
// controllers above and more; extra are more flags (feature gates).
func startControllerManager(ctx context.Context, binDir, kubeconfig string, p *pki, port int, logPath string, more []string, extra ...string) (*Process, error) {
	args := []string{
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--leader-elect=false",
		"--controllers", strings.Join(append(slices.Clone(controllers), more...), ","),
		"--service-account-private-key-file", p.SAKeyFile,
		"--root-ca-file", p.CAFile,
		"--use-service-account-credentials=false",
		"--concurrent-gc-syncs", "5",
		"--v=1",
	}
	args = append(args, extra...)
	proc, err := startProcess("kube-controller-manager", filepath.Join(binDir, "kube-controller-manager"), args, nil, logPath)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// Like the scheduler, it serves a self-signed certificate.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local health probe only
	}}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	err = proc.waitFor(wctx, "kube-controller-manager healthy", 200*time.Millisecond, func(ctx context.Context) error {
		return httpOK(ctx, hc, url)
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}
