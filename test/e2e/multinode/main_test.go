//go:build e2e

package multinode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/test/e2e/framework"
	"github.com/railyard-io/railyard/test/multus"
)

// cluster is the cluster up.sh started for the package; nil (and why in
// skip) when there is none. release is the Kubernetes release it runs,
// "1.35" or "1.37" (RAILYARD_E2E_KUBERNETES, checked against the
// apiserver's /version).
var (
	cluster *framework.MultiCluster
	skip    string
	release string
)

// releases are the Kubernetes releases of the version matrix (up.sh's
// --kubernetes; docs/e2e.md). The first is the default: the release the
// single-node suites run, whose binaries hack/e2e.sh builds anyway, so a
// run by hand needs no second cold build; hack/e2e.sh runs the package once
// per release, naming each.
var releases = []string{"1.35", "1.37"}

// releaseEnv picks the release of the package's cluster.
const releaseEnv = "RAILYARD_E2E_KUBERNETES"

func TestMain(m *testing.M) {
	// Under multus.BinaryName in a node's CNI bin dir this binary is the
	// Multus stand-in that node's containerd runs (installMultus).
	if filepath.Base(os.Args[0]) == multus.BinaryName {
		os.Exit(multus.Main())
	}
	os.Exit(run(m))
}

// run starts the cluster with hack/cluster/up.sh (as a user would), runs
// the tests and stops it with hack/cluster/down.sh, also on SIGINT and
// SIGTERM. Without root every test skips.
func run(m *testing.M) int {
	release = envOr(releaseEnv, releases[0])
	if !slices.Contains(releases, release) {
		fmt.Fprintf(os.Stderr, "multinode: %s=%s: the cluster runs one of %v\n", releaseEnv, release, releases)
		return 1
	}
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
	// One directory per release: hack/e2e.sh runs the package once on each.
	logs := filepath.Join(os.Getenv("RAILYARD_E2E_LOGS"), "multinode", release)
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
	args := []string{dir, "--kubernetes", release, "--nodes", envOr("RAILYARD_MULTINODE_NODES", "2"), "--gpu-dra"}
	if minorOf(release) >= 37 {
		args = append(args, "--group-scheduling")
	}
	if err := script(repo, "up.sh", args...); err != nil {
		fmt.Fprintln(os.Stderr, "multinode: up:", err)
		down()
		return 1
	}
	fmt.Printf("multinode: cluster up in %v (hack/cluster/up.sh --kubernetes %s, warm builds included)\n", time.Since(start).Round(time.Millisecond), release)
	if cluster, err = framework.AttachMulti(dir); err != nil {
		fmt.Fprintln(os.Stderr, "multinode:", err)
		down()
		return 1
	}
	if err := checkRelease(cluster, release); err != nil {
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

// checkRelease prints the release the cluster runs, as its apiserver
// (discovery's /version) and every kubelet (the Node's status) report it,
// and fails unless all are the release asked for.
func checkRelease(c *framework.MultiCluster, want string) error {
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("the apiserver's version: %w", err)
	}
	fmt.Printf("multinode: Kubernetes %s (kube-apiserver's /version; %s=%s)\n", v.GitVersion, releaseEnv, want)
	if got := v.Major + "." + v.Minor; got != want {
		return fmt.Errorf("the apiserver runs %s (%s), not the release %s=%s asks for", got, v.GitVersion, releaseEnv, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("the kubelets' versions: %w", err)
	}
	var kubelets []string
	for _, n := range nodes.Items {
		kv := n.Status.NodeInfo.KubeletVersion
		kubelets = append(kubelets, n.Name+" "+kv)
		if !strings.HasPrefix(kv, "v"+want+".") {
			return fmt.Errorf("node %s's kubelet runs %s, not %s", n.Name, kv, want)
		}
	}
	fmt.Printf("multinode: kubelets: %s\n", strings.Join(kubelets, ", "))
	return nil
}

// needRelease skips a test that needs a feature only newer releases have
// (since, such as "1.37") on an older one, saying what and why.
func needRelease(t *testing.T, since, feature string) {
	t.Helper()
	if minorOf(release) < minorOf(since) {
		t.Skipf("multinode: %s needs Kubernetes %s or newer; this run's cluster is %s (%s)", feature, since, release, releaseEnv)
	}
}

// minorOf is the minor number of a release "1.N".
func minorOf(r string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(r, "1."))
	if err != nil {
		panic(fmt.Sprintf("release %q is not 1.N", r))
	}
	return n
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
