//go:build e2e

package e2e

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

// cluster is the one cluster every test in this package shares; nil when the
// suite is skipped (skipReason says why).
var (
	cluster    *framework.Cluster
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

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
	cfg := framework.Config{
		K8sBinDir:     envOr("RAILYARD_E2E_K8S_BIN", filepath.Join(repo, "_output/k8s/bin")),
		CNIBinDir:     envOr("RAILYARD_E2E_CNI_BIN", filepath.Join(repo, "_output/k8s/cni")),
		LogDir:        envOr("RAILYARD_E2E_LOGS", filepath.Join(repo, "_output/e2e/logs")),
		ProjectBinDir: envOr("RAILYARD_E2E_BIN", filepath.Join(repo, "bin")),
		Logf:          func(f string, a ...any) { fmt.Printf(f+"\n", a...) },
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
	fmt.Printf("e2e: cluster up in %v (logs in %s)\n", time.Since(start).Round(time.Millisecond), cfg.LogDir)
	// Tear down on SIGINT/SIGTERM too (a go test timeout panics instead:
	// hack/e2e.sh then runs test/e2e/reap, and every Start reaps stale runs).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v: tearing down\n", s)
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: teardown: %v\n", err)
		}
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sigs)
	stopStart := time.Now()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: teardown: %v\n", err)
		code = 1
	}
	fmt.Printf("e2e: teardown took %v\n", time.Since(stopStart).Round(time.Millisecond))
	return code
}

// requireCluster skips the test when the suite is not running as root.
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

// repoRoot finds the repository root (the directory with go.mod) from the
// test's working directory.
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

// testContext returns a context that ends with the test or after d.
func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
