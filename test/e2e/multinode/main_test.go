//go:build e2e

package multinode

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// cluster is the cluster up.sh started for the package; nil (and why in
// skip) when there is none.
var (
	cluster *framework.MultiCluster
	skip    string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts the cluster with hack/cluster/up.sh (as a user would), runs
// the tests and stops it with hack/cluster/down.sh, also on SIGINT and
// SIGTERM. Without root every test skips.
func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		skip = "multinode: needs root (it starts kubelets, containerds, namespaces and a bridge); skipping"
		fmt.Println(skip)
		return m.Run()
	}
	repo, err := framework.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "multinode:", err)
		return 1
	}
	// Short: containerd's sockets live below it (108-byte sun_path).
	dir, err := os.MkdirTemp("", "ry-mn-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "multinode:", err)
		return 1
	}
	logs := filepath.Join(os.Getenv("RAILYARD_E2E_LOGS"), "multinode")
	// down runs down.sh and checks that the host keeps nothing of the
	// cluster (when it got as far as to describe itself).
	down := func() int {
		start := time.Now()
		code := 0
		if err := script(repo, "down.sh", dir); err != nil {
			fmt.Fprintln(os.Stderr, "multinode: down:", err)
			code = 1
		}
		fmt.Printf("multinode: cluster down in %v\n", time.Since(start).Round(time.Millisecond))
		if cluster != nil {
			if traces := framework.HostTraces(&cluster.Info); len(traces) > 0 {
				fmt.Fprintf(os.Stderr, "multinode: down.sh left on the host:\n  %s\n", strings.Join(traces, "\n  "))
				code = 1
			}
		}
		if os.Getenv("RAILYARD_E2E_LOGS") != "" {
			_ = os.RemoveAll(logs)
			_ = os.MkdirAll(filepath.Dir(logs), 0o755)
			if err := os.Rename(filepath.Join(dir, "logs"), logs); err == nil {
				fmt.Printf("multinode: component logs in %s\n", logs)
			}
		}
		_ = os.RemoveAll(dir)
		return code
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "multinode: %v: tearing down\n", sig)
		down()
		os.Exit(1)
	}()
	start := time.Now()
	args := []string{dir, "--nodes", envOr("RAILYARD_MULTINODE_NODES", "2")}
	if err := script(repo, "up.sh", args...); err != nil {
		fmt.Fprintln(os.Stderr, "multinode: up:", err)
		down()
		return 1
	}
	fmt.Printf("multinode: cluster up in %v (hack/cluster/up.sh, warm builds included)\n", time.Since(start).Round(time.Millisecond))
	if cluster, err = framework.AttachMulti(dir); err != nil {
		fmt.Fprintln(os.Stderr, "multinode:", err)
		down()
		return 1
	}
	code := m.Run()
	signal.Stop(sigs)
	// HostTraces sees a running cluster (else its empty answer after
	// down.sh would prove nothing).
	if traces := framework.HostTraces(&cluster.Info); !slices.Contains(traces, "link "+cluster.Info.Bridge) || len(traces) < 10 {
		fmt.Fprintf(os.Stderr, "multinode: HostTraces misses the running cluster: %q\n", traces)
		code = 1
	}
	// down.sh's hard case, on every run: the server is killed (as a test
	// timeout or an OOM kill would), and down.sh must still leave nothing.
	if err := syscall.Kill(cluster.Info.ServerPID, syscall.SIGKILL); err != nil {
		fmt.Fprintln(os.Stderr, "multinode: kill the cluster's server:", err)
		code = 1
	}
	if down() != 0 {
		code = 1
	}
	return code
}

func script(repo, name string, args ...string) error {
	cmd := exec.Command(filepath.Join(repo, "hack/cluster", name), args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/cluster/%s: %w", name, err)
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// mc returns the cluster or skips the test.
func mc(t *testing.T) *framework.MultiCluster {
	t.Helper()
	if cluster == nil {
		t.Skip(skip)
	}
	return cluster
}
