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
	"strconv"
	"time"
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
}

func startAPIServer(ctx context.Context, o apiserverOptions) (*Process, error) {
	args := []string{
		"--etcd-servers", "http://127.0.0.1:" + strconv.Itoa(o.EtcdPort),
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(o.SecurePort),
		"--tls-cert-file", o.PKI.CertFile,
		"--tls-private-key-file", o.PKI.KeyFile,
		"--cert-dir", filepath.Join(o.Dir, "apiserver-certs"),
		"--token-auth-file", o.PKI.TokensFile,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", o.PKI.SAPubFile,
		"--service-account-signing-key-file", o.PKI.SAKeyFile,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--disable-admission-plugins", "ServiceAccount",
		"--allow-privileged=true",
		// The node's hostname is not resolvable: reach the kubelet by IP.
		"--kubelet-preferred-address-types", "InternalIP",
		"--profiling=false",
		"--v=1",
	}
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
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", o.SecurePort)
	err = proc.waitFor(wctx, "kube-apiserver ready", 200*time.Millisecond, func(ctx context.Context) error {
		return httpOKWithToken(ctx, hc, url, o.PKI.AdminToken)
	})
	if err != nil {
		_ = proc.Kill()
		return nil, err
	}
	return proc, nil
}

func startScheduler(ctx context.Context, binDir, kubeconfig string, port int, logPath string) (*Process, error) {
	args := []string{
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--leader-elect=false",
		"--v=2",
	}
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
