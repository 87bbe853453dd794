package benchreport

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/bench"
)

// The bandwidth chart shows the GPUDirect near and far runs and osu_bw
// against message size; the latency chart osu_latency's curve.
func TestChartsShowGPUDirectPairAndOSUCurves(t *testing.T) {
	t.Parallel()
	bw := func(gbps float64) bench.Result {
		return bench.Result{Tool: "ib_write_bw", Kind: bench.KindPerftestBW, OK: true,
			PerftestBW: []bench.PerftestBWRow{{Bytes: 4096, BWAvgGbps: gbps / 2}, {Bytes: 65536, BWAvgGbps: gbps}}}
	}
	osuBW := bench.Parse([]byte("# OSU MPI Bandwidth Test v5.6.2\n# Size      Bandwidth (MB/s)\n1                       3.51\n4194304             12060.00\n"))
	osuLat := bench.Parse([]byte("# OSU MPI Latency Test v5.6.2\n# Size          Latency (us)\n0                       1.77\n1024                    3.02\n"))
	results := []bench.Labelled{
		{Scenario: bench.ScenarioGPUDirectNear, Result: bw(84)},
		{Scenario: bench.ScenarioGPUDirectFar, Result: bw(28)},
		{Scenario: "rdma", Result: osuBW},
		{Scenario: "rdma", Result: osuLat},
	}
	c, ok := BandwidthChart(results, 100)
	var names []string
	for _, s := range c.Series {
		names = append(names, s.Name)
	}
	if d := cmp.Diff([]string{"gpudirect-near (ib_write_bw)", "gpudirect-far (ib_write_bw)", "rdma (osu_bw)"}, names); !ok || d != "" {
		t.Errorf("bandwidth series (-want +got):\n%s", d)
	}
	l, ok := LatencyChart(results)
	if !ok || len(l.Series) != 1 || l.Series[0].Name != "rdma (osu_latency)" || len(l.Series[0].X) != 2 {
		t.Errorf("latency series %+v", l.Series)
	}
}
