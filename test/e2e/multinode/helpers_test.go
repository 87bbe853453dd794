//go:build e2e

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/helmchart"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// kubectl runs the cluster's kubectl (admin kubeconfig) with stdin.
func kubectl(ctx context.Context, c *framework.MultiCluster, stdin string, args ...string) ([]byte, error) {
	full := append([]string{"--kubeconfig", c.Kubeconfig, "--cache-dir", filepath.Join(c.Info.Dir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(c.Info.K8sBinDir, "kubectl"), full...)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd.CombinedOutput()
}

// railPool is rail r's pool in up.sh's values.
func railPool(r int) corev1.ResourceName {
	return corev1.ResourceName("railyard.io/rail" + strconv.Itoa(r))
}

// poll calls f every interval until it returns true, or fails the test
// with what f last said when ctx ends.
func poll(ctx context.Context, t *testing.T, what string, f func(context.Context) (bool, string)) {
	t.Helper()
	for {
		ok, last := f(ctx)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v (last: %s)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// allocatable returns a node's allocatable count of a resource.
func allocatable(ctx context.Context, c *framework.MultiCluster, node string, res corev1.ResourceName) (int64, error) {
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	q := n.Status.Allocatable[res]
	return q.Value(), nil
}

// fabricCounter returns a fabric port's received packets (from
// /proc/net/dev in the fabric's network namespace).
func fabricCounter(ctx context.Context, t *testing.T, c *framework.MultiCluster, port string) int64 {
	t.Helper()
	out, err := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(c.Info.FabricPID), "--net", "--", "cat", "/proc/net/dev").Output()
	if err != nil {
		t.Fatalf("fabric /proc/net/dev: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != port {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("fabric port %s: %v", port, err)
		}
		return n
	}
	t.Fatalf("fabric has no port %s:\n%s", port, out)
	return 0
}

// fabricPort names node index i's port on rail r's leaf.
func fabricPort(node framework.NodeInfo, r int) string { return fmt.Sprintf("n%dr%d", node.Index, r) }

func itoa[T ~int | ~int32 | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// railAllocations returns what whereabouts' IPPool of subnet holds: the
// pod ("namespace/name") of every allocated address, empty when it has
// none or no pool exists yet.
func railAllocations(ctx context.Context, c *framework.MultiCluster, subnet string) (map[string]string, error) {
	out, err := kubectl(ctx, c, "", "get", "ippools.whereabouts.cni.cncf.io", "-A", "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var list struct {
		Items []struct {
			Spec struct {
				Range       string `json:"range"`
				Allocations map[string]struct {
					PodRef string `json:"podref"`
				} `json:"allocations"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	got := map[string]string{}
	for _, p := range list.Items {
		if p.Spec.Range == subnet {
			for offset, a := range p.Spec.Allocations {
				got[offset] = a.PodRef
			}
		}
	}
	return got, nil
}

// railyardBin is the railyard binary the suite runs ($RAILYARD_E2E_BIN,
// else make build's bin/).
func railyardBin(t *testing.T) string {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(envOr("RAILYARD_E2E_BIN", filepath.Join(repo, "bin")), "railyard")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v (make build)", err)
	}
	return bin
}

// clusterChart loads the chart and the values up.sh wrote for this
// cluster's nodes (createNamespace set: the release makes its namespace).
func clusterChart(t *testing.T, c *framework.MultiCluster) (*chart.Chart, map[string]any) {
	t.Helper()
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(filepath.Join(repo, "deploy/helm/railyard"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(c.Info.Dir, "railyard-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(data, &vals); err != nil {
		t.Fatal(err)
	}
	vals["createNamespace"] = true
	return ch, vals
}

// deleteRelease deletes what a rendered release applied (its namespace
// included, as helm uninstall does) and waits until the namespace is gone.
func deleteRelease(ctx context.Context, t *testing.T, c *framework.MultiCluster, stream, ns string) bool {
	t.Helper()
	if out, err := kubectl(ctx, c, stream, "delete", "--wait=false", "-f", "-"); err != nil {
		t.Errorf("kubectl delete: %v\n%s", err, out)
		return false
	}
	poll(ctx, t, "namespace "+ns+" gone", func(ctx context.Context) (bool, string) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil {
			return false, "still there"
		}
		return apierrors.IsNotFound(err), err.Error()
	})
	return true
}
