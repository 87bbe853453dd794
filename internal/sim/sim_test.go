package sim

import (
	"context"
	"sync"
	"testing"

	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// machineTopologies discovers every built-in machine once (through its
// generated fake sysfs tree, like a real node) with 8 VFs per PF.
var machineTopologies = sync.OnceValues(func() (map[string]*topology.Topology, error) {
	out := map[string]*topology.Topology{}
	for _, n := range machines.Names() {
		t, err := machines.Topology(context.Background(), n, 8)
		if err != nil {
			return nil, err
		}
		out[n] = t
	}
	return out, nil
})

func builtin(t *testing.T, name string) *topology.Topology {
	t.Helper()
	all, err := machineTopologies()
	if err != nil {
		t.Fatal(err)
	}
	return all[name]
}

func TestSmoke(t *testing.T) {
	res, err := Run(context.Background(), Config{Topology: builtin(t, "dgx-h100"), Machine: "dgx-h100", Nodes: 20, Pods: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Policies {
		t.Logf("%-10s gdr %.3f bw %.2f rej %d stranded %.1f p99 %.1fus classes %v", p.Name, p.GDRFraction, p.MeanGbps, p.Rejected, p.StrandedMean, p.AllocP99us, p.Classes)
	}
}
