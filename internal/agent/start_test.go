package agent

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/podresources/podrestest"
)

// TestMissingDevRootFailsAtStart: a devRoot that does not exist (a typo,
// a host path not mounted) used to start silently and serve devices no
// container could get; the agent must refuse to start, naming devRoot.
func TestMissingDevRootFailsAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "roce-8gpu-4nic", 0)
	cfg := e.writeConfig(t, twoPools(`""`))
	for _, tc := range []struct {
		name, root string
		want       error
	}{
		{"missing", filepath.Join(e.dir, "no-such-dev"), fs.ErrNotExist},
		{"a file", cfg, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := false
			err := run(ctx, append(e.args(cfg), "--dev-root", tc.root), func(string) (string, bool) { return "", false }, testStreams(), nil,
				func(*Agent, net.Addr) { served = true; cancel() })
			if served {
				t.Fatal("the agent served with this devRoot")
			}
			if err == nil || !strings.Contains(err.Error(), "devRoot") || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("err = %v, want a devRoot error (%v)", err, tc.want)
			}
		})
	}
}

// TestServingLogSaysWhereMetricsAre: the start-up line said
// metrics=<nil> with the endpoint disabled.
func TestServingLogSaysWhereMetricsAre(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 0)
	podrestest.Start(t, e.podSock)
	cfg := e.writeConfig(t, twoPools(`""`))
	off := start(t, append(e.args(cfg), "--metrics-addr", "0"), nil)
	off.stop()
	if l := off.log.String(); !strings.Contains(l, `metrics="off (metricsAddr 0)"`) || strings.Contains(l, "<nil>") {
		t.Errorf("start-up log with metrics off:\n%s", grepLines(l, "serving"))
	}
	on := start(t, e.args(cfg), nil)
	on.stop()
	if want := "metrics=http://" + on.metrics.String() + "/metrics"; !strings.Contains(on.log.String(), want) {
		t.Errorf("start-up log lacks %s:\n%s", want, grepLines(on.log.String(), "serving"))
	}
}
