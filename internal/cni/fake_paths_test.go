package cni

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// TestConfigPathsOutsideWhatTheCNIOwnsAreRefusedFakeVF: a network
// configuration (a NetworkAttachmentDefinition's) naming a stateDir,
// logFile or bindingDir outside what railyard-cni owns is refused by ADD
// with code 7 before anything is written there, and DEL succeeds without
// writing there either. The plugin's test root is the world's own
// directory; the attacker's is a temporary directory beside it.
func TestConfigPathsOutsideWhatTheCNIOwnsAreRefusedFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evil := t.TempDir()
	p := w.plugin()
	p.TestRoot = filepath.Dir(w.stateDir)
	if strings.HasPrefix(evil, p.TestRoot+"/") {
		t.Fatalf("the attacker's directory %s is below the test root %s", evil, p.TestRoot)
	}
	for _, field := range []string{"stateDir", "logFile", "bindingDir"} {
		target := filepath.Join(evil, field)
		conf := w.conf(vfPCI, map[string]any{field: target, "logLevel": "debug"})
		_, err := p.Add(ctx, args("c1", pod1, "net1", conf))
		if e := ToCNIError(err); err == nil || e.Code != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), field+": ") || strings.Count(err.Error(), "is not a path railyard-cni owns") != 1 {
			t.Errorf("%s=%s: ADD = %v, want code 7 naming %s", field, target, err, field)
		}
		var out, errOut bytes.Buffer
		if err := p.Serve(ctx, serveEnv("DEL", "c1", pod1, "net1"), bytes.NewReader(conf), &out, &errOut); err != nil {
			t.Errorf("%s: DEL = %v, want success", field, err)
		}
		if _, err := os.Lstat(target); !os.IsNotExist(err) {
			t.Errorf("%s: %s was created (%v)", field, target, err)
		}
	}
	w.assertPristine()
}
