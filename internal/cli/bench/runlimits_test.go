package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// planFile writes a probe plan and returns its path.
func planFile(t *testing.T) string {
	t.Helper()
	plan, _, err := run(t, "", "plan", "--image", "ghcr.io/railyard-io/railyard:0.1.0", "--nodes", "node-a,node-a",
		"--tests", "probe", "--variant", "tcp-podnet")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// An API server that completes TLS and never answers: --timeout is the
// whole run's limit (it ran 150 s and more past --timeout 1m).
func TestRunAgainstAServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stop)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := planFile(t)
	type ran struct {
		err error
		d   time.Duration
	}
	done := make(chan ran, 1)
	go func() {
		start := time.Now()
		_, _, err := run(t, "", "run", "-f", plan, "--kubeconfig", kubeconfig, "--timeout", "2s", "--poll-interval", "100ms")
		done <- ran{err, time.Since(start)}
	}()
	select {
	case r := <-done:
		if r.err == nil || !strings.Contains(r.err.Error(), "deadline exceeded") {
			t.Errorf("err = %v, want the run's deadline", r.err)
		}
		if r.d > 20*time.Second {
			t.Errorf("ran %v past --timeout 2s", r.d)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("bench run still running 60 s after --timeout 2s")
	}
}

// Every request of a real client is bounded on its own.
func TestRestConfigBoundsEveryRequest(t *testing.T) {
	t.Parallel()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\n" +
		"users: [{name: u}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := restConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != benchrun.RequestTimeout || c.Timeout <= 0 {
		t.Errorf("rest.Config Timeout = %v, want %v", c.Timeout, benchrun.RequestTimeout)
	}
}

// -n is checked before the cluster is contacted.
func TestRunRefusesABadNamespaceLocally(t *testing.T) {
	t.Parallel()
	plan := planFile(t)
	newCmd := func(s iostreams.Streams) *cobra.Command {
		return newRunCommand(s, func(string) (benchrun.Cluster, error) {
			t.Error("the cluster was contacted")
			return nil, fmt.Errorf("no cluster")
		})
	}
	for _, ns := range []string{"Bad NS", "UPPER", "a_b", "-x", strings.Repeat("a", 64)} {
		_, _, err := clitest.Run(t, newCmd, "", "-f", plan, "-n", ns)
		if err == nil || !strings.Contains(err.Error(), "--namespace") || !strings.Contains(err.Error(), "not a namespace name") {
			t.Errorf("-n %q: err = %v, want --namespace ... not a namespace name", ns, err)
		}
	}
}
