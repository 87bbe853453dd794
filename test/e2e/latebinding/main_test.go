//go:build e2e

package latebinding

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// cluster is the cluster of this package (containerd v2 with CDI); nil when
// the suite is skipped (skipReason says why).
var (
	cluster    *framework.Cluster
	skipReason string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		skipReason = "e2e: needs root (it starts a kubelet, containerd and a bridge); skipping"
		fmt.Println(skipReason)
		return m.Run()
	}
	repo, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctrd := envOr("RAILYARD_E2E_CONTAINERD_BIN", filepath.Join(repo, "_output/containerd/bin"))
	if _, err := os.Stat(filepath.Join(ctrd, "containerd")); err != nil {
		skipReason = "e2e: no containerd v2 in " + ctrd + " (hack/cluster/build-containerd.sh builds it); skipping"
		fmt.Println(skipReason)
		return m.Run()
	}
	cfg := framework.Config{
		K8sBinDir:        envOr("RAILYARD_E2E_K8S_BIN", filepath.Join(repo, "_output/k8s/bin")),
		CNIBinDir:        envOr("RAILYARD_E2E_CNI_BIN", filepath.Join(repo, "_output/k8s/cni")),
		LogDir:           filepath.Join(envOr("RAILYARD_E2E_LOGS", filepath.Join(repo, "_output/e2e/logs")), "latebinding"),
		ProjectBinDir:    envOr("RAILYARD_E2E_BIN", filepath.Join(repo, "bin")),
		ContainerdBinDir: ctrd,
		Logf:             func(f string, a ...any) { fmt.Printf(f+"\n", a...) },
	}
	if err := os.RemoveAll(cfg.LogDir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cluster, err = framework.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: start cluster: %v\n(component logs in %s)\n", err, cfg.LogDir)
		return 1
	}
	fmt.Printf("e2e: cluster with containerd v2 up in %v (logs in %s)\n", time.Since(start).Round(time.Millisecond), cfg.LogDir)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v: tearing down\n", s)
		_ = cluster.Stop()
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sigs)
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: teardown: %v\n", err)
		code = 1
	}
	return code
}

func requireCluster(t *testing.T) *framework.Cluster {
	t.Helper()
	if cluster == nil {
		t.Skip(skipReason)
	}
	return cluster
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
