package kubeclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigBoundsEveryRequestAndNamesBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(good, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(good, 7*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout != 7*time.Second || cfg.Host != "https://127.0.0.1:1" {
		t.Errorf("timeout %v host %q", cfg.Timeout, cfg.Host)
	}
	if _, err := New(good, time.Second); err != nil {
		t.Errorf("New: %v", err)
	}
	if _, err := Config(filepath.Join(dir, "missing"), time.Second); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("missing file: %v", err)
	}
}
