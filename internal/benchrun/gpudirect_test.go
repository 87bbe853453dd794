package benchrun_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/internal/benchrun"
	"github.com/railyard-io/railyard/internal/benchrun/benchruntest"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// TestExecuteGPUDirectPairsInOrder: the far GPUDirect pair (which takes
// every GPU of its nodes, as the near pair does) is created only once the
// near pair has finished, and each run is reported under its own scenario.
// The logs are a stand-in: a real RoCE ib_write_bw output (not a GPUDirect
// run, which needs GPUs) for both clients.
func TestExecuteGPUDirectPairsInOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo, err := machines.Topology(ctx, "roce-8gpu-4nic", 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := benchplan.ChooseGPUDirect(topo, "", topology.ClassUnknown)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := benchplan.Objects(benchplan.Options{Image: "i", Nodes: []string{"a", "b"}, Tests: []benchplan.Test{benchplan.GPUDirectTest},
		Variants: []benchplan.Variant{benchplan.RDMA}, GPUDirect: &g})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := benchrun.FromObjects(objs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vectors", "perftest_ib_write_bw_all_gbits_roce_k8s_pods__nvidia_cloud-native-docs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, perftest, _ := bytes.Cut(data, []byte("\n"))
	const (
		nearServer = "railyard-bench-gdr-near-perftest-server-rdma"
		nearClient = "railyard-bench-gdr-near-perftest-client-rdma"
		farServer  = "railyard-bench-gdr-far-perftest-server-rdma"
		farClient  = "railyard-bench-gdr-far-perftest-client-rdma"
	)
	k := benchruntest.New(map[string]benchruntest.Script{
		nearServer: {RunPolls: 5}, nearClient: {RunPolls: 5, Log: string(perftest)},
		farServer: {RunPolls: 5}, farClient: {RunPolls: 5, Log: string(perftest)},
	})
	k.Run(ctx, t)
	out, err := benchrun.Execute(ctx, k.Cluster(), plan, benchrun.Options{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	order := k.Order()
	if len(order) != 4 || slices.Index(order, farServer) < slices.Index(order, nearClient) || slices.Index(order, farClient) < slices.Index(order, nearClient) {
		t.Errorf("pods created in order %v: the far pair must come after the near pair", order)
	}
	scenarios := map[string]bool{}
	for _, r := range out.Runs {
		scenarios[r.Scenario] = r.Status == benchrun.Succeeded && r.Result.OK && r.Result.Tool == "ib_write_bw"
	}
	if !scenarios[benchplan.ScenarioGPUDirectNear] || !scenarios[benchplan.ScenarioGPUDirectFar] || len(scenarios) != 2 {
		t.Errorf("runs %+v", scenarios)
	}
	// The judge sees both under their scenarios: a line-rate check each and
	// the pair's alignment ratio.
	vs := bench.Judge(bench.JudgeInput{Results: out.Results(), LineRateGbps: 100})
	checks := map[string]int{}
	for _, v := range vs {
		checks[v.Check]++
	}
	if len(vs) != 3 || checks[bench.CheckLineRate] != 2 || checks[bench.CheckGPUDirectAlignment] != 1 {
		t.Errorf("verdicts %+v", vs)
	}
}
