package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		have bool
		want string
	}{{0.5, 0.25, true, "×2.00"}, {0, 0, true, "×1.00"}, {1, 0, true, "n/a"}, {1, 1, false, "–"}} {
		if got := ratio(c.a, c.b, c.have); got != c.want {
			t.Errorf("ratio(%v, %v, %v) = %q, want %q", c.a, c.b, c.have, got, c.want)
		}
	}
}

func tableResult() *Result {
	return &Result{
		Machine: "dgx-1", Nodes: 3, Pods: 10, Events: 19, Elapsed: 1500 * time.Microsecond,
		Config: Settings{Seed: 2, Mix: []MixEntry{{GPUs: 1, Weight: 2}, {GPUs: 8, Weight: 0.5}}, Devices: PerGPU, Load: 0.9, TopologyPolicy: "best-effort",
			Scheduler: "most-allocated", GPUsKnown: 0.5, Bandwidth: "PIX=10.5", GPUsPerNode: 8, DevicesPerNode: 32, PFsPerNode: 4},
		Policies: []PolicyResult{
			{Name: "kubelet", Binding: AtAllocate, GDRFraction: 0.25, MeanGbps: 5.25, Rejected: 1, GPUs: 8, DevicesHeld: 10, DevicesIdle: 2,
				Classes: map[string]int{"PIX": 2, "SYS": 6}, StrandedMean: 3.25, StrandedFraction: 0.0338, AllocP50us: 1.26, AllocP99us: 9},
			{Name: "optimal", Binding: InClaim, GDRFraction: 1, MeanGbps: 10.5, GPUs: 8, Classes: map[string]int{"PIX": 8}},
		},
	}
}

// The table holds what both renderers show, formatted once.
func TestTable(t *testing.T) {
	tab := tableResult().Table()
	var names []string
	for _, c := range tab.Columns {
		names = append(names, c.Name)
		if c.Title == "" {
			t.Errorf("column %s has no title", c.Name)
		}
	}
	want := []string{"POLICY", "BINDING", "GDR", "xKUBELET", "xNUMA", "%OPTIMAL", "GB/s", "PIX", "PXB", "PHB", "NODE", "SYS", "REJECTED", "STRANDED", "HELD/GPU", "P50 µs", "P99 µs"}
	if !slices.Equal(names, want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	rows := [][]string{
		{"kubelet", "allocate", "25.0%", "×1.00", "–", "25.0%", "5.25", "25.0%", "0.0%", "0.0%", "0.0%", "75.0%", "1", "3.2 (3.4%)", "1.25 (20.0% idle)", "1.3", "9.0"},
		{"optimal", "claim", "100.0%", "×4.00", "–", "100.0%", "10.50", "100.0%", "0.0%", "0.0%", "0.0%", "0.0%", "0", "0.0 (0.0%)", "0.00 (0.0% idle)", "0.0", "0.0"},
	}
	for i, row := range tab.Rows {
		if !slices.Equal(row, rows[i]) {
			t.Errorf("row %d:\n got %q\nwant %q", i, row, rows[i])
		}
	}
	if !strings.Contains(tab.Columns[1].Note, "50% of pods") {
		t.Errorf("binding note does not give the share of GPUs known: %q", tab.Columns[1].Note)
	}
}

func TestSettings(t *testing.T) {
	got := map[string]string{}
	for _, s := range tableResult().Settings() {
		got[s.Name] = s.Value
	}
	for k, v := range map[string]string{
		"Machine": "dgx-1", "Per node": "8 GPUs, 4 RDMA PFs, 32 allocatable devices", "Pod arrivals / events per policy": "10 / 19",
		"Workload mix (weights)": "1 GPU × 2, 8 GPU × 0.5", "NIC devices per pod": "one per GPU", "Offered GPU load": "90%",
		"GPUs allocated before the NIC (allocate-time policies know them)": "50% of pods", "Seed": "2", "Simulated in": "2ms",
	} {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}
