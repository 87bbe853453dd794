//go:build e2e

package framework

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Suite is the one cluster the tests of a package share: its TestMain calls
// Run, its tests call Cluster.
type Suite struct {
	// Name tells the suite's output apart ("e2e", "latebinding"); a suite
	// other than "e2e" keeps its component logs in a subdirectory of that
	// name.
	Name string
	// ContainerdV2 runs the cluster on containerd v2 with CDI, built by
	// hack/cluster/build.sh containerd (the suite skips without it).
	ContainerdV2 bool
	// CNINetworks is Config.CNINetworks: containerd's max_conf_num.
	CNINetworks int

	cluster *Cluster
	skip    string
}

// Run starts the cluster, runs the tests and tears the cluster down (on
// SIGINT and SIGTERM as well), returning the exit code. Without root, or
// without a binary the suite needs, every test skips and says why. A go
// test timeout panics instead: hack/e2e.sh then runs test/e2e/reap, and
// every Start reaps stale runs.
func (s *Suite) Run(m *testing.M) int {
	if os.Geteuid() != 0 {
		return s.skipAll(m, s.Name+": needs root (it starts a kubelet, containerd and a bridge); skipping")
	}
	repo, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, s.Name+":", err)
		return 1
	}
	logs := envOr("RAILYARD_E2E_LOGS", filepath.Join(repo, "_output/e2e/logs"))
	if s.Name != "e2e" {
		logs = filepath.Join(logs, s.Name)
	}
	cfg := Config{
		K8sBinDir:     envOr("RAILYARD_E2E_K8S_BIN", filepath.Join(repo, "_output/k8s/bin")),
		CNIBinDir:     envOr("RAILYARD_E2E_CNI_BIN", filepath.Join(repo, "_output/k8s/cni")),
		LogDir:        logs,
		ProjectBinDir: envOr("RAILYARD_E2E_BIN", filepath.Join(repo, "bin")),
		CNINetworks:   s.CNINetworks,
		Logf:          func(f string, a ...any) { fmt.Printf(f+"\n", a...) },
	}
	what := "cluster"
	if s.ContainerdV2 {
		cfg.ContainerdBinDir = envOr("RAILYARD_E2E_CONTAINERD_BIN", filepath.Join(repo, "_output/containerd/bin"))
		if _, err := os.Stat(filepath.Join(cfg.ContainerdBinDir, "containerd")); err != nil {
			return s.skipAll(m, s.Name+": no containerd v2 in "+cfg.ContainerdBinDir+" (hack/cluster/build.sh containerd builds it); skipping")
		}
		what = "cluster with containerd v2"
	}
	if err := os.RemoveAll(cfg.LogDir); err != nil {
		fmt.Fprintln(os.Stderr, s.Name+":", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	s.cluster, err = Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: start cluster: %v\n(component logs in %s)\n", s.Name, err, cfg.LogDir)
		return 1
	}
	fmt.Printf("%s: %s up in %v (logs in %s)\n", s.Name, what, time.Since(start).Round(time.Millisecond), cfg.LogDir)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "%s: %v: tearing down\n", s.Name, sig)
		if err := s.cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: teardown: %v\n", s.Name, err)
		}
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sigs)
	stopStart := time.Now()
	if err := s.cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: teardown: %v\n", s.Name, err)
		code = 1
	}
	fmt.Printf("%s: teardown took %v\n", s.Name, time.Since(stopStart).Round(time.Millisecond))
	return code
}

func (s *Suite) skipAll(m *testing.M, why string) int {
	s.skip = why
	fmt.Println(why)
	return m.Run()
}

// Cluster returns the suite's cluster, or skips the test saying why there
// is none.
func (s *Suite) Cluster(t *testing.T) *Cluster {
	t.Helper()
	if s.cluster == nil {
		t.Skip(s.skip)
	}
	return s.cluster
}

// Context returns a context that ends with the test or after d.
func Context(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// RepoRoot finds the repository root (the directory with go.mod) from the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repository root: %w", err)
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

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
