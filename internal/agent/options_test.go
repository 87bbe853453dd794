package agent

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func testStreams() io.Writer {
	return io.Discard
}

// TestPrecedence: flags > RAILYARD_* > file > defaults.
func TestPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte(`apiVersion: railyard.io/v1alpha1
kind: AgentConfig
sysfsRoot: /file/sys
devRoot: /file/dev
pluginDir: /file/dp
resyncInterval: 1m
pools: [{name: railyard.io/rdma, selectors: {}}]
`), 0o644)
	environ := map[string]string{
		"RAILYARD_CONFIG":          file,
		"RAILYARD_DEV_ROOT":        "/env/dev",
		"RAILYARD_PLUGIN_DIR":      "/env/dp",
		"RAILYARD_RESYNC_INTERVAL": "2m",
	}
	lookup := func(k string) (string, bool) { v, ok := environ[k]; return v, ok }
	opt, err := ParseOptions([]string{"--plugin-dir", "/flag/dp"}, lookup, pflag.NewFlagSet("t", pflag.ContinueOnError))
	if err != nil {
		t.Fatal(err)
	}
	c := opt.Config
	if c.SysfsRoot != "/file/sys" || c.DevRoot != "/env/dev" || c.PluginDir != "/flag/dp" ||
		c.ResyncInterval.Duration != 2*time.Minute || c.PodResourcesSocket != "/var/lib/kubelet/pod-resources/kubelet.sock" {
		t.Errorf("precedence broken: %+v", c)
	}
}

func TestOptionErrors(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, args := range [][]string{
		{},                           // no config
		{"--config", "/nonexistent"}, // unreadable
		{"--config", "x", "extra"},   // stray argument
		{"--log-level", "loud", "--config", "x"},
	} {
		if _, err := ParseOptions(args, none, pflag.NewFlagSet("t", pflag.ContinueOnError)); err == nil {
			t.Errorf("ParseOptions(%v) accepted", args)
		}
	}
	file := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(file, []byte("apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\npools: [{name: railyard.io/rdma, selectors: {}}]\n"), 0o644)
	_, err := ParseOptions([]string{"--config", file, "--resync-interval", "soon"}, none, pflag.NewFlagSet("t", pflag.ContinueOnError))
	if err == nil || !strings.Contains(err.Error(), "--resync-interval") {
		t.Errorf("bad duration: %v", err)
	}
	_, err = ParseOptions([]string{"--config", file, "--dev-root", "relative", "--metrics-addr", "nope"}, none, pflag.NewFlagSet("t", pflag.ContinueOnError))
	if err == nil || !strings.Contains(err.Error(), "devRoot") || !strings.Contains(err.Error(), "metricsAddr") {
		t.Errorf("flag values not validated: %v", err)
	}
}

func newFlagSet() *pflag.FlagSet { return pflag.NewFlagSet("t", pflag.ContinueOnError) }
