package helmchart

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func yamlUnmarshal(doc string, into any) error { return yaml.Unmarshal([]byte(doc), into) }

// TestDeployManifestsAreRenderingsOfTheChart fails when deploy/*.yaml
// differ from what `make manifests` would write.
func TestDeployManifestsAreRenderingsOfTheChart(t *testing.T) {
	if _, err := Write(chartDir, "../../deploy", true); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range StaticManifests() {
		known[s.File] = true
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") && !known[e.Name()] {
			t.Errorf("deploy/%s is not rendered from the chart", e.Name())
		}
	}
}

func TestWriteThenCheckAndDriftIsReported(t *testing.T) {
	dir := t.TempDir()
	written, err := Write(chartDir, dir, false)
	if err != nil || len(written) != len(StaticManifests()) {
		t.Fatalf("written %v, %v", written, err)
	}
	if again, err := Write(chartDir, dir, false); err != nil || len(again) != 0 {
		t.Fatalf("second write rewrote %v, %v", again, err)
	}
	p := filepath.Join(dir, "railyard-agent.yaml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Write(chartDir, dir, true)
	if !errors.Is(err, ErrDrift) || !strings.Contains(err.Error(), p) {
		t.Fatalf("hand-edited file: %v", err)
	}
}

// TestBinariesDoNotLinkHelmOrTheImageBuilder: the node binaries stay free
// of the build tooling's dependencies, and the CNI plugin and its
// installer of client-go's API clients (they call no Kubernetes API). The
// agent links them for its DRA kubelet plugin, the only part with RBAC
// (templates/dra.yaml, rendered only for a pool with delivery dra).
func TestBinariesDoNotLinkHelmOrTheImageBuilder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, cmd := range []string{"./cmd/railyard-agent", "./cmd/railyard-cni", "./cmd/railyard-cni-install"} {
		c := exec.Command("go", "list", "-deps", cmd)
		c.Dir = "../.."
		out, err := c.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", cmd, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "helm.sh/") || strings.HasPrefix(dep, "github.com/google/go-containerregistry") ||
				dep == "github.com/railyard-io/railyard/internal/helmchart" ||
				(cmd != "./cmd/railyard-agent" && (dep == "k8s.io/client-go/rest" || dep == "k8s.io/client-go/kubernetes")) {
				t.Errorf("%s links %s", cmd, dep)
			}
		}
	}
}
