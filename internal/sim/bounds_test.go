package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// Counts past the bounds are configuration errors, found before any
// allocation (math.MaxInt pods used to panic in makeslice).
func TestBoundsAreConfigErrors(t *testing.T) {
	topo := builtin(t, "dgx-1")
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"max int pods":  {Config{Topology: topo, Nodes: 1, Pods: math.MaxInt}, "pods: 9223372036854775807, want 0 to 2000000"},
		"1e9 pods":      {Config{Topology: topo, Nodes: 1, Pods: 1e9}, "pods: 1000000000, want 0 to 2000000"},
		"max int nodes": {Config{Topology: topo, Nodes: math.MaxInt}, "nodes: 9223372036854775807, want 1 to 100000"},
	} {
		_, err := Run(context.Background(), tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrConfig with %q", name, err, tc.want)
		}
	}
	// The frontier goal's size passes validation.
	if _, err := (Config{Topology: topo, Nodes: 12_500, Pods: 1_000_000}).withDefaults(); err != nil {
		t.Errorf("frontier size: %v", err)
	}
}
