package agent

import (
	"errors"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

func TestStaleAfterSaturates(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		10 * time.Second:             60 * time.Second,
		24 * time.Hour:               72*time.Hour + 30*time.Second,
		1000000 * time.Hour:          math.MaxInt64,
		time.Duration(math.MaxInt64): math.MaxInt64,
		0:                            30 * time.Second,
	} {
		if got := staleAfter(in); got != want {
			t.Errorf("staleAfter(%v) = %v, want %v", in, got, want)
		}
	}
}

// A long resync interval keeps /healthz healthy after a discovery; a
// discovery older than the limit, or a failed one, does not.
func TestHealthWithLongResyncInterval(t *testing.T) {
	for _, resync := range []time.Duration{1000000 * time.Hour, 24 * time.Hour} {
		a := &Agent{cfg: &v1alpha1.AgentConfig{ResyncInterval: &metav1.Duration{Duration: resync}}, lastOK: time.Now()}
		if err := a.health(); err != nil {
			t.Errorf("resync %v: health right after a discovery: %v", resync, err)
		}
	}
	a := &Agent{cfg: &v1alpha1.AgentConfig{ResyncInterval: &metav1.Duration{Duration: time.Second}}, lastOK: time.Now().Add(-time.Minute)}
	if err := a.health(); err == nil {
		t.Error("a discovery older than 3 x 1s + 30s is healthy")
	}
	a.lastOK, a.lastErr = time.Now(), errors.New("sysfs unreadable")
	if err := a.health(); err == nil {
		t.Error("a failed discovery is healthy")
	}
}
