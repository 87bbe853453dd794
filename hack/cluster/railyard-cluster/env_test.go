//go:build e2e

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestEnvNamesTheRelease: DIR/env, sourced by a shell, gives the
// cluster's own release's kubectl and the release its apiserver reports.
func TestEnvNamesTheRelease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	info := framework.ClusterInfo{
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), K8sBinDir: "/r/_output/k8s-1.37/bin",
		KubernetesVersion: "v1.37.2",
	}
	if err := writeEnv(dir, info); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `set -eu; source "$1/env"; echo "$KUBECTL $KUBERNETES_VERSION $KUBECONFIG"`, "bash", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("source env: %v\n%s", err, out)
	}
	want := "/r/_output/k8s-1.37/bin/kubectl v1.37.2 " + info.Kubeconfig
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("env gives %q, want %q", got, want)
	}
}
