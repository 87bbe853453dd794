//go:build e2e

package multinode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	relpkg "github.com/railyard-io/railyard/internal/release"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// releaseChartVersion is the version the packaged chart gets here, as
// `make release VERSION=0.2.0` gives it.
const releaseChartVersion = "0.2.0"

// TestReleaseChartHelmInstall: the chart as a release ships it installs
// with the real Helm CLI. The chart is a release directory's
// railyard-<version>.tgz, checked against its SHA256SUMS first, when
// RAILYARD_E2E_RELEASE_DIR names one (`make release VERSION=0.2.0
// OUT=dir`), else packaged here by release.PackageChart, the function
// `make release` calls. `helm install --create-namespace --wait` with
// up.sh's values (the cluster's image) brings the agent DaemonSet up on
// every GPU node with the chart's version recorded by Helm; `helm
// uninstall --wait` takes it away again and the rails' pools with it.
// Helm is v3.21.1's own command (hack/cluster/build.sh helm), the version
// of the SDK the module links; nothing here is a stand-in.
func TestReleaseChartHelmInstall(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 6*time.Minute)
	helm := envOr("RAILYARD_E2E_HELM", "")
	if helm == "" {
		repo, err := framework.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		helm = filepath.Join(repo, "_output", "helm", "bin", "helm")
	}
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm: %v (hack/cluster/build.sh helm builds it; hack/e2e.sh does)", err)
	}
	tgz, relDir := releaseChart(t)
	_, vals := clusterChart(t, c)
	vals["createNamespace"] = false // helm install --create-namespace owns it
	if relDir != "" {
		// The release's own image, under the name its chart defaults to.
		importReleaseImage(ctx, t, c, relDir)
		delete(vals, "image")
	}
	raw, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	helmRun := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", c.Kubeconfig, "--namespace", releaseNS)...)
		// Helm's caches and config in the test's own directory, not $HOME.
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	installed := false
	t.Cleanup(func() {
		if !installed {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if out, err := helmRun(ctx, "uninstall", "railyard", "--wait"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
		deleteNamespace(ctx, t, c, releaseNS)
	})
	start := time.Now()
	out, err := helmRun(ctx, "install", "railyard", tgz, "--create-namespace", "--values", valuesFile, "--wait", "--timeout", "4m")
	installed = true
	if err != nil {
		t.Fatalf("helm install %s: %v\n%s", filepath.Base(tgz), err, out)
	}
	t.Logf("helm install %s: deployed and ready in %v", filepath.Base(tgz), time.Since(start).Round(time.Millisecond))
	gpus := c.Info.GPUNodes()
	ds := waitDaemonSet(ctx, t, c, len(gpus))
	checkAgentPods(ctx, t, c, ds, gpus)
	if relDir != "" {
		want := "ghcr.io/railyard-io/railyard:" + releaseChartVersion
		for _, ctr := range ds.Spec.Template.Spec.Containers {
			if ctr.Image != want {
				t.Errorf("container %s runs %s, want the release's %s", ctr.Name, ctr.Image, want)
			}
		}
	}
	if got := ds.Labels["helm.sh/chart"]; got != "railyard-"+releaseChartVersion {
		t.Errorf("the DaemonSet's helm.sh/chart label is %q, want railyard-%s", got, releaseChartVersion)
	}
	list, err := helmRun(ctx, "list", "--output", "json")
	if err != nil {
		t.Fatalf("helm list: %v\n%s", err, list)
	}
	var releases []struct {
		Name       string `json:"name"`
		Status     string `json:"status"`
		Chart      string `json:"chart"`
		AppVersion string `json:"app_version"`
	}
	if err := yaml.Unmarshal([]byte(list), &releases); err != nil {
		t.Fatalf("helm list output %q: %v", list, err)
	}
	if len(releases) != 1 || releases[0].Status != "deployed" || releases[0].Chart != "railyard-"+releaseChartVersion || releases[0].AppVersion != releaseChartVersion {
		t.Errorf("helm list: %+v, want railyard deployed at chart railyard-%[2]s, app %[2]s", releases, releaseChartVersion)
	}
	for _, n := range gpus {
		poll(ctx, t, n.Name+" allocatable "+string(railPool(0)), func(ctx context.Context) (bool, string) {
			v, err := allocatable(ctx, c, n.Name, railPool(0))
			if err != nil {
				return false, err.Error()
			}
			return v == 1, itoa(int32(v))
		})
	}
	if out, err := helmRun(ctx, "uninstall", "railyard", "--wait"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	installed = false
	deleteNamespace(ctx, t, c, releaseNS)
	for _, n := range gpus {
		poll(ctx, t, n.Name+" pools gone after helm uninstall", func(ctx context.Context) (bool, string) {
			v, err := allocatable(ctx, c, n.Name, railPool(0))
			if err != nil {
				return false, err.Error()
			}
			return v == 0, itoa(int32(v))
		})
	}
}

// releaseChart returns the packaged chart's path and the release
// directory: RAILYARD_E2E_RELEASE_DIR's, verified against its SHA256SUMS,
// or one packaged here as make release packages it (and no directory).
func releaseChart(t *testing.T) (string, string) {
	t.Helper()
	name := "railyard-" + releaseChartVersion + ".tgz"
	if dir := os.Getenv("RAILYARD_E2E_RELEASE_DIR"); dir != "" {
		names, err := relpkg.Verify(dir)
		if err != nil {
			t.Fatalf("release %s: %v", dir, err)
		}
		for _, n := range names {
			if n == name {
				t.Logf("chart %s of release %s, checksums verified (%d files)", name, dir, len(names))
				return filepath.Join(dir, name), dir
			}
		}
		t.Fatalf("release %s has no %s among %q", dir, name, names)
	}
	repo, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	got, tgz, err := relpkg.PackageChart(filepath.Join(repo, "deploy", "helm", "railyard"), releaseChartVersion, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got != name {
		t.Fatalf("packaged %s, want %s", got, name)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ""
}

// importReleaseImage imports the release's image archive of this machine's
// architecture into every node's containerd, as an operator's registry
// pull would put it there.
func importReleaseImage(ctx context.Context, t *testing.T, c *framework.MultiCluster, dir string) {
	t.Helper()
	archive := filepath.Join(dir, "railyard-"+releaseChartVersion+"-linux-"+runtime.GOARCH+".tar")
	ctr := filepath.Join(envOr("RAILYARD_E2E_CONTAINERD_BIN", ""), "ctr")
	for _, n := range c.Info.Nodes {
		out, err := exec.CommandContext(ctx, ctr, "--address", n.ContainerdSocket, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput()
		if err != nil {
			t.Fatalf("node %s: ctr images import %s: %v\n%s", n.Name, archive, err, out)
		}
	}
}

// deleteNamespace deletes ns (helm uninstall leaves the namespace
// --create-namespace made) and waits until it is gone.
func deleteNamespace(ctx context.Context, t *testing.T, c *framework.MultiCluster, ns string) {
	t.Helper()
	err := c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete namespace %s: %v", ns, err)
		return
	}
	poll(ctx, t, "namespace "+ns+" gone", func(ctx context.Context) (bool, string) {
		_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil {
			return false, "still there"
		}
		return apierrors.IsNotFound(err), strings.TrimSpace(err.Error())
	})
}
