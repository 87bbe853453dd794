package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// TestDiscoverForNCCLTopologyFile: with ncclTopologyFile set, the agent's
// discovery classifies pairs from the file (the Azure NDv5 model: a flat
// sysfs where every same-NUMA pair is NODE, and its NCCL topology file with
// the PIX pairs); an unreadable file fails start-up naming the field.
func TestDiscoverForNCCLTopologyFile(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("azure-ndv5", root, 0); err != nil {
		t.Fatal(err)
	}
	flat, err := discoverFor(&v1alpha1.AgentConfig{})
	if err != nil {
		t.Fatal(err)
	}
	withFile, err := discoverFor(&v1alpha1.AgentConfig{NCCLTopologyFile: "../../machines/azure_ndv5.nccl-topo.xml"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := flat(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := withFile(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	count := func(t *topology.Topology, c topology.Class) int {
		n := 0
		for _, r := range t.Rails {
			if r.Class == c {
				n++
			}
		}
		return n
	}
	if count(a, topology.PIX) != 0 || count(b, topology.PIX) != len(b.Rails) || len(b.Rails) == 0 {
		t.Errorf("rails: sysfs alone %d PIX of %d, with the file %d PIX of %d", count(a, topology.PIX), len(a.Rails), count(b, topology.PIX), len(b.Rails))
	}

	bad := filepath.Join(t.TempDir(), "topo.xml")
	if err := os.WriteFile(bad, []byte("<system><cpu"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(t.TempDir(), "missing.xml")} {
		if _, err := discoverFor(&v1alpha1.AgentConfig{NCCLTopologyFile: path}); err == nil || !strings.HasPrefix(err.Error(), "ncclTopologyFile: ") {
			t.Errorf("discoverFor(%s) error %v, want one naming ncclTopologyFile", path, err)
		}
	}
}
