package porthealth_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/porthealth"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// pf is mlx5_0, a DGX H100 PF, and its PCI address.
const (
	pf    = "mlx5_0"
	pfPCI = "0000:18:00.0"
)

// tree is a generated DGX H100 node whose PFs have mlx5's counter files
// (all zero): the tests advance them as a failing link would. No NIC
// here: the files are what the kernel's drivers write, the values the
// test's.
func tree(t *testing.T) (string, *topology.Topology) {
	t.Helper()
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 0); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range topo.NICs {
		if n.RDMA != "" {
			if err := fakesysfs.WriteCounters(root, n.RDMA, fakesysfs.MLX5); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root, topo
}

var cfg = porthealth.Config{Window: 30 * time.Second, LinkErrors: 10, Hold: 5 * time.Minute}

// step is one reading: counters advanced (or set) before it, at a time
// after the start, and the reason wanted for the PF (empty: healthy).
type step struct {
	at      time.Duration
	advance map[string]uint64
	set     map[string]uint64
	want    string
}

func TestTrackerJudgesRisesByTheRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"quiet link stays healthy", []step{{at: 0}, {at: 10 * time.Second}, {at: time.Hour}}},
		{"a flap degrades at once", []step{
			{at: 0},
			{at: 10 * time.Second, advance: map[string]uint64{"counters/link_downed": 1}, want: "port 1 link flapped (link_downed +1 in 10s)"},
		}},
		{"link error recovery is a flap", []step{
			{at: 0},
			{at: 5 * time.Second, advance: map[string]uint64{"counters/link_error_recovery": 2}, want: "link_error_recovery +2"},
		}},
		{"link errors below the threshold are tolerated", []step{
			{at: 0},
			{at: 10 * time.Second, advance: map[string]uint64{"counters/symbol_error": 9}},
			// the window passed: the base moved, the 9 are forgotten
			{at: 40 * time.Second},
			{at: 50 * time.Second, advance: map[string]uint64{"counters/symbol_error": 9}},
		}},
		{"link errors add up over a window", []step{
			{at: 0},
			{at: 10 * time.Second, advance: map[string]uint64{"counters/symbol_error": 6}},
			{at: 20 * time.Second, advance: map[string]uint64{"counters/local_link_integrity_errors": 4},
				want: "port 1 link errors (local_link_integrity_errors +4, symbol_error +6 in 20s, at least 10 degrade)"},
		}},
		{"degraded until the hold passes without a rise", []step{
			{at: 0},
			{at: 10 * time.Second, advance: map[string]uint64{"counters/link_downed": 1}, want: "link flapped"},
			{at: 4 * time.Minute, want: "link flapped"},
			{at: 5*time.Minute + 11*time.Second},
		}},
		{"a new flap extends the hold", []step{
			{at: 0},
			{at: 10 * time.Second, advance: map[string]uint64{"counters/link_downed": 1}, want: "link flapped"},
			{at: 4 * time.Minute, advance: map[string]uint64{"counters/link_downed": 1}, want: "link flapped"},
			{at: 8 * time.Minute, want: "link flapped"},
			{at: 9*time.Minute + 1*time.Second},
		}},
		// A value that went down is a wrap or a reset, which look alike
		// from the upper half (rdmacounter.RawDelta): neither is judged,
		// as railyard doctor judges neither.
		{"a wrap of an 8-bit counter is not judged", []step{
			{at: 0, set: map[string]uint64{"counters/link_downed": 255}},
			{at: 10 * time.Second, advance: map[string]uint64{"counters/link_downed": 2}},
			{at: 20 * time.Second, advance: map[string]uint64{"counters/link_downed": 1}, want: "link_downed +1"},
		}},
		{"a reset (driver reload) is not a rise", []step{
			{at: 0, set: map[string]uint64{"counters/symbol_error": 20, "counters/link_downed": 3}},
			{at: 10 * time.Second, set: map[string]uint64{"counters/symbol_error": 0, "counters/link_downed": 0}},
		}},
		{"retransmissions and receive errors do not degrade", []step{
			{at: 0},
			{at: 10 * time.Second, advance: map[string]uint64{"hw_counters/local_ack_timeout_err": 500, "hw_counters/req_transport_retries_exceeded": 3, "counters/port_rcv_errors": 100}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, topo := tree(t)
			tr := porthealth.New(cfg, sysfs.New(root))
			start := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
			for i, s := range tc.steps {
				for k, v := range s.set {
					if err := fakesysfs.SetCounter(root, pf, 1, k, v); err != nil {
						t.Fatal(err)
					}
				}
				if err := fakesysfs.AdvanceCounters(root, pf, 1, fakesysfs.MLX5, s.advance); err != nil {
					t.Fatal(err)
				}
				got := tr.Observe(topo, start.Add(s.at))
				switch {
				case s.want == "" && len(got) != 0:
					t.Errorf("step %d (%v): degraded %v, want none", i, s.at, got)
				case s.want != "" && (len(got) != 1 || !strings.Contains(got[pfPCI], s.want)):
					t.Errorf("step %d (%v): degraded %v, want %s: %q", i, s.at, got, pfPCI, s.want)
				}
			}
		})
	}
}

// A port whose counters cannot be read is not judged healthy by it: it
// keeps its degraded mark until the hold ends.
func TestUnreadableCountersKeepTheMarkUntilTheHoldEnds(t *testing.T) {
	root, topo := tree(t)
	tr := porthealth.New(cfg, sysfs.New(root))
	start := time.Now()
	tr.Observe(topo, start)
	if err := fakesysfs.AdvanceCounters(root, pf, 1, fakesysfs.MLX5, map[string]uint64{"counters/link_downed": 1}); err != nil {
		t.Fatal(err)
	}
	if got := tr.Observe(topo, start.Add(time.Second)); got[pfPCI] == "" {
		t.Fatalf("not degraded after a flap: %v", got)
	}
	// The counter directories go away (a driver reloading).
	for _, dir := range []string{"counters", "hw_counters"} {
		if err := os.RemoveAll(filepath.Join(root, "class/infiniband", pf, "ports/1", dir)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tr.Observe(topo, start.Add(time.Minute)); got[pfPCI] == "" {
		t.Errorf("unreadable counters cleared the mark: %v", got)
	}
	if got := tr.Observe(topo, start.Add(6*time.Minute)); len(got) != 0 {
		t.Errorf("the hold ended and the mark stayed: %v", got)
	}
}

// The rules come from rdmacounter's table (its link faults, Flap marking
// the flaps): this is the list the agent's docs (docs/agent.md, "Health
// from counters") describe, so a counter renamed, added to or taken from
// the table's link faults fails here.
func TestRulesAreTheTablesLinkFaults(t *testing.T) {
	t.Parallel()
	want := []porthealth.Rule{
		{Counter: "link_downed", Class: porthealth.Flap},
		{Counter: "port_excessive_buffer_overrun_errors", Class: porthealth.LinkError},
		{Counter: "port_link_downed", Class: porthealth.Flap},
		{Counter: "port_link_error_recoveries", Class: porthealth.Flap},
		{Counter: "port_local_link_integrity_errors", Class: porthealth.LinkError},
		{Counter: "port_symbol_errors", Class: porthealth.LinkError},
	}
	if diff := cmp.Diff(want, porthealth.Rules()); diff != "" {
		t.Errorf("Rules (-want +got):\n%s", diff)
	}
}
