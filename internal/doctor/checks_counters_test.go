package doctor

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/rdmacounter"
)

// counterChecks returns the rdma-errors checks of a report by subject.
func counterChecks(r Report) map[string]Check {
	out := map[string]Check{}
	for _, c := range r.Checks {
		if c.ID == "rdma-errors" {
			out[c.Subject] = c
		}
	}
	return out
}

// duringWindow makes the env's counter window run change before it
// returns: the files change between the two readings, as traffic would
// change them.
func (e *env) duringWindow(change func()) {
	e.opt.Wait = func(_ context.Context, d time.Duration) error {
		if d != e.opt.CounterWindow {
			e.t.Errorf("waited %s, want the window %s", d, e.opt.CounterWindow)
		}
		change()
		return nil
	}
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) portFile(rdma, rel string) string {
	return filepath.Join(e.sys, "class/infiniband", rdma, "ports/1", rel)
}

// Each case changes one port's counter files before the first reading
// (before) or between the two (during); that port's rdma-errors line says
// what the files say, and the other ports stay ok.
func TestRDMAErrorsJudgesTheCounterFiles(t *testing.T) {
	t.Parallel()
	const maxU32 = math.MaxUint32
	for name, tc := range map[string]struct {
		before, during func(e *env)
		subject        string
		status         Status
		summary        string
		fix            []string // in the fix
		notFix         string   // not in the fix
	}{
		"symbol errors rise (RoCE)": {
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_1", 1, fakesysfs.MLX5, map[string]uint64{"counters/symbol_error": 12}))
			},
			subject: "mlx5_1/1", status: Fail,
			summary: "link errors rose in 2s: counters/symbol_error +12 (0 → 12)",
			fix:     []string{"reseat or replace the cable or transceiver of mlx5_1 port 1 (ens42np0)", "switch port", "railyard top", "PFC and ECN (the roce-qos check)"},
		},
		"transport retries exceeded rise (InfiniBand)": {
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_0", 1, fakesysfs.MLX5, map[string]uint64{"hw_counters/req_transport_retries_exceeded": 2}))
			},
			subject: "mlx5_0/1", status: Fail,
			summary: "requests exhausted their transport retries (their queue pairs failed) in 2s: hw_counters/req_transport_retries_exceeded +2 (0 → 2)",
			fix:     []string{"cable or transceiver of mlx5_0 port 1 (ibp24s0)", "railyard top"},
			notFix:  "roce-qos",
		},
		// Rising on top of a history: both are told.
		"symbol errors rise on a link with symbol errors": {
			before: func(e *env) {
				e.must(fakesysfs.SetCounter(e.sys, "mlx5_0", 1, "counters/symbol_error", 3))
			},
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_0", 1, fakesysfs.MLX5, map[string]uint64{"counters/symbol_error": 12}))
			},
			subject: "mlx5_0/1", status: Fail,
			summary: "link errors rose in 2s: counters/symbol_error +12 (3 → 15); link errors since boot: counters/symbol_error 3 (history, not necessarily now)",
			fix:     []string{"cable or transceiver of mlx5_0 port 1 (ibp24s0)"},
			notFix:  "roce-qos",
		},
		"link_downed 3 since boot, nothing rising": {
			before: func(e *env) {
				e.must(fakesysfs.SetCounter(e.sys, "mlx5_2", 1, "counters/link_downed", 3))
			},
			subject: "mlx5_2/1", status: Warn,
			summary: "link errors since boot: counters/link_downed 3 (history, not necessarily now)",
			fix:     []string{"perfquery -R", "--counter-window 30s", "cable or transceiver of mlx5_2 port 1 (ens59np0)"},
		},
		"retransmissions rise": {
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_1", 1, fakesysfs.MLX5, map[string]uint64{
					"hw_counters/local_ack_timeout_err": 40, "hw_counters/out_of_sequence": 7,
				}))
			},
			subject: "mlx5_1/1", status: Warn,
			summary: "retransmissions in 2s (loss or congestion): hw_counters/out_of_sequence +7 (0 → 7), hw_counters/local_ack_timeout_err +40 (0 → 40)",
			fix:     []string{"railyard top", "PFC and ECN (the roce-qos check)"},
		},
		"an error counter the health check does not judge rises": {
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_1", 1, fakesysfs.MLX5, map[string]uint64{"hw_counters/out_of_buffer": 9}))
			},
			subject: "mlx5_1/1", status: OK,
			summary: "18 error counters read twice, 2s apart: none rose; no link errors since boot; also rose (not judged): hw_counters/out_of_buffer +9 (0 → 9)",
		},
		"no counters directory": {
			before: func(e *env) {
				e.must(os.RemoveAll(e.portFile("mlx5_2", "counters")))
				e.must(os.RemoveAll(e.portFile("mlx5_2", "hw_counters")))
			},
			subject: "mlx5_2/1", status: Skip,
			summary: "no error counters in ports/1/counters or hw_counters: a VF or a driver without counters",
		},
		// 4294967293 + 5 wraps to 2 at 32 bits: not a rise of 2^64 - ...,
		// and, since a wrap and a reset look alike, no rise at all.
		"a 32-bit transport counter wraps": {
			before: func(e *env) {
				e.must(fakesysfs.SetCounter(e.sys, "mlx5_1", 1, "hw_counters/req_transport_retries_exceeded", maxU32-2))
			},
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_1", 1, fakesysfs.MLX5, map[string]uint64{"hw_counters/req_transport_retries_exceeded": 5}))
			},
			subject: "mlx5_1/1", status: OK,
			summary: "18 error counters read twice, 2s apart: none rose; no link errors since boot; " +
				"went down, not counted as a rise (a wrap or a device reset): hw_counters/req_transport_retries_exceeded 4294967293 → 2",
		},
		// A device reset in the window: no rise, and the value read
		// before it is the link's history.
		"a device reset during the window": {
			before: func(e *env) {
				e.must(fakesysfs.SetCounter(e.sys, "mlx5_1", 1, "counters/symbol_error", 100))
			},
			during:  func(e *env) { e.must(fakesysfs.ResetCounters(e.sys, "mlx5_1", 1)) },
			subject: "mlx5_1/1", status: Warn,
			summary: "link errors since boot: counters/symbol_error 100 (history, not necessarily now); " +
				"went down, not counted as a rise (a wrap or a device reset): counters/symbol_error 100 → 0",
		},
		"a garbled counter file": {
			before: func(e *env) {
				e.must(os.WriteFile(e.portFile("mlx5_1", "hw_counters/out_of_sequence"), []byte("N/A\n"), 0o644))
			},
			subject: "mlx5_1/1", status: Skip,
			summary: `cannot read every error counter: mlx5_1 port 1: class/infiniband/mlx5_1/ports/1/hw_counters/out_of_sequence: counter "N/A": not an unsigned decimal counter (invalid syntax)` +
				"; of the 17 read, none says a fault",
		},
		"a counter file garbled at the second reading": {
			during: func(e *env) {
				e.must(os.WriteFile(e.portFile("mlx5_1", "counters/link_downed"), []byte("-1\n"), 0o644))
			},
			subject: "mlx5_1/1", status: Skip,
			summary: `cannot read every error counter: mlx5_1 port 1: class/infiniband/mlx5_1/ports/1/counters/link_downed: counter "-1": not an unsigned decimal counter (at the second reading)` +
				"; of the 17 read, none says a fault",
		},
		"a FIFO in place of a counter file": {
			before: func(e *env) {
				p := e.portFile("mlx5_0", "counters/symbol_error")
				e.must(os.Remove(p))
				e.must(syscall.Mkfifo(p, 0o644))
			},
			subject: "mlx5_0/1", status: Skip,
			summary: "cannot read every error counter: mlx5_0 port 1: ",
		},
		// What cannot be read does not hide what rose.
		"a garbled file beside a rise": {
			before: func(e *env) {
				e.must(os.WriteFile(e.portFile("mlx5_1", "hw_counters/out_of_sequence"), []byte("lots\n"), 0o644))
			},
			during: func(e *env) {
				e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_1", 1, fakesysfs.MLX5, map[string]uint64{"counters/link_error_recovery": 1}))
			},
			subject: "mlx5_1/1", status: Fail,
			summary: `link errors rose in 2s: counters/link_error_recovery +1 (0 → 1); unreadable: mlx5_1 port 1: class/infiniband/mlx5_1/ports/1/hw_counters/out_of_sequence: counter "lots": not an unsigned decimal counter (invalid syntax)`,
			fix:     []string{"cable or transceiver of mlx5_1 port 1"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if tc.before != nil {
				tc.before(e)
			}
			if tc.during != nil {
				e.duringWindow(func() { tc.during(e) })
			}
			got := counterChecks(e.run())
			want := map[string]Status{"mlx5_0/1": OK, "mlx5_1/1": OK, "mlx5_2/1": OK, tc.subject: tc.status}
			gotStatus := map[string]Status{}
			for s, c := range got {
				gotStatus[s] = c.Status
			}
			if diff := cmp.Diff(want, gotStatus); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			c := got[tc.subject]
			if strings.HasSuffix(tc.summary, ": ") { // a prefix: the rest is the OS's words
				if !strings.HasPrefix(c.Summary, tc.summary) || !strings.Contains(c.Summary, "counters/symbol_error") {
					t.Errorf("summary %q, want %q... naming counters/symbol_error", c.Summary, tc.summary)
				}
			} else if diff := cmp.Diff(tc.summary, c.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			for _, f := range tc.fix {
				if !strings.Contains(c.Fix, f) {
					t.Errorf("fix %q lacks %q", c.Fix, f)
				}
			}
			if tc.notFix != "" && strings.Contains(c.Fix, tc.notFix) {
				t.Errorf("fix %q has %q", c.Fix, tc.notFix)
			}
			if len(c.Read) == 0 {
				t.Error("the check says nothing about what it read")
			}
		})
	}
}

// The check follows rdmacounter's table: a rise of each error counter a
// port has (mlx5's on mlx5_1, Soft-RoCE's on mlx5_2 given rxe's files) is
// a failure for a link fault or a transport failure, a warning for a
// retransmission, and ok (named, not judged) otherwise.
func TestRDMAErrorsFollowsTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.must(os.RemoveAll(e.portFile("mlx5_2", "counters")))
	e.must(os.RemoveAll(e.portFile("mlx5_2", "hw_counters")))
	e.must(fakesysfs.WriteCounters(e.sys, "mlx5_2", fakesysfs.RXE))
	want := map[rdmacounter.Health]Status{rdmacounter.LinkFault: Fail, rdmacounter.TransportFailure: Fail, rdmacounter.Retransmission: Warn, rdmacounter.NoHealth: OK}
	judged := 0
	for _, k := range rdmacounter.Counters() {
		if k.Kind != rdmacounter.Error {
			continue
		}
		key := string(k.Dir) + "/" + k.File
		rdma, drv := "mlx5_1", fakesysfs.MLX5
		if _, err := os.Stat(e.portFile(rdma, key)); err != nil {
			rdma, drv = "mlx5_2", fakesysfs.RXE
		}
		if _, err := os.Stat(e.portFile(rdma, key)); err != nil {
			t.Errorf("%s: neither fake driver has it", key)
			continue
		}
		e.duringWindow(func() { e.must(fakesysfs.AdvanceCounters(e.sys, rdma, 1, drv, map[string]uint64{key: 1})) })
		c := counterChecks(e.run())[rdma+"/1"]
		wantSummary := key + " +1 (0 → 1)"
		if c.Status != want[k.Health] || !strings.Contains(c.Summary, wantSummary) {
			t.Errorf("%s (%q) rose: %s %q, want %s naming %q", key, k.Health, c.Status, c.Summary, want[k.Health], wantSummary)
		}
		judged++
		e.must(fakesysfs.ResetCounters(e.sys, rdma, 1))
	}
	if judged < 20 {
		t.Errorf("only %d error counters tried", judged)
	}
}

// One wait for the whole node, the window long; none with a window of 0
// (read once: the summary says rises were not checked), and none when no
// port has error counters.
func TestRDMAErrorsWaitsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var waits []time.Duration
	e.opt.CounterWindow = 5 * time.Second
	e.opt.Wait = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	e.run()
	if diff := cmp.Diff([]time.Duration{5 * time.Second}, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	waits = nil
	e.opt.CounterWindow = 0
	e.must(fakesysfs.SetCounter(e.sys, "mlx5_0", 1, "counters/link_downed", 1))
	got := counterChecks(e.run())
	if len(waits) != 0 {
		t.Errorf("a window of 0 waited %v", waits)
	}
	if c := got["mlx5_1/1"]; c.Status != OK || c.Summary != "18 error counters read once (no counter window: rises not checked); no link errors since boot" {
		t.Errorf("read once: %s %q", c.Status, c.Summary)
	}
	if c := got["mlx5_0/1"]; c.Status != Warn || !strings.Contains(c.Summary, "counters/link_downed 1 (history") {
		t.Errorf("history read once: %s %q", c.Status, c.Summary)
	}
	e.opt.CounterWindow = 5 * time.Second
	for _, rdma := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		e.must(os.RemoveAll(e.portFile(rdma, "counters")))
		e.must(os.RemoveAll(e.portFile(rdma, "hw_counters")))
	}
	e.run()
	if len(waits) != 0 {
		t.Errorf("waited %v for ports without counters", waits)
	}
}

// Ctrl-C during the window ends doctor at once: the real timer (a
// minute's window) and a hook that sees the context cancelled; Run
// returns the context's error and the ports' lines say they were
// interrupted.
func TestRDMAErrorsWindowEndsWithTheContext(t *testing.T) {
	t.Parallel()
	for name, wait := range map[string]func(context.Context, time.Duration) error{
		"timer": nil,
		"hook": func(ctx context.Context, _ time.Duration) error {
			<-ctx.Done()
			return ctx.Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.opt.CounterWindow, e.opt.Wait = MaxCounterWindow, wait
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Cancelled as the first counter file is read, before the
			// window: not after a fixed delay, which a loaded machine
			// spends before rdma-errors even starts.
			e.opt.Recorder = &cancelOnRead{match: "counters/", cancel: cancel}
			start := time.Now()
			r, err := Run(ctx, e.opt)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("Run took %s after the cancel", took)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			got := counterChecks(r)
			if len(got) != 3 {
				t.Fatalf("%d rdma-errors lines, want 3", len(got))
			}
			for s, c := range got {
				if c.Status != Skip || !strings.HasPrefix(c.Summary, "interrupted during the 1m0s counter window (context canceled)") {
					t.Errorf("%s: %s %q", s, c.Status, c.Summary)
				}
			}
		})
	}
}

func TestCounterWindowIsValidated(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "", DefaultCounterWindow: "", MaxCounterWindow: "",
		-time.Second:                   "counter window -1s: negative",
		MaxCounterWindow + time.Second: "counter window 1m1s: longer than 1m0s",
	} {
		err := ValidateCounterWindow(d)
		if (want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("ValidateCounterWindow(%s) = %v, want %q", d, err, want)
		}
	}
	e := newEnv(t)
	e.opt.CounterWindow = -time.Second
	if _, err := Run(context.Background(), e.opt); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("Run with a negative window: %v", err)
	}
}

// A failing port's table entry shows what was read and the fix.
func TestRDMAErrorsInTheTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.duringWindow(func() {
		e.must(fakesysfs.AdvanceCounters(e.sys, "mlx5_0", 1, fakesysfs.MLX5, map[string]uint64{"counters/link_downed": 1}))
	})
	var buf bytes.Buffer
	if err := e.run().WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"FAIL rdma-errors: link errors rose in 2s: counters/link_downed +1 (0 → 1)",
		"read: sysfs class/infiniband/mlx5_0/ports/1/{counters,hw_counters}: 18 error counters read twice, 2s apart (link counters too: a PF)",
		"read: non-zero: counters/link_downed 1",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

// cancelOnRead is a sysfs recorder that calls cancel once, when a path
// containing match is read.
type cancelOnRead struct {
	match  string
	cancel func()
	once   sync.Once
}

func (c *cancelOnRead) Record(path string) {
	if strings.Contains(path, c.match) {
		c.once.Do(c.cancel)
	}
}
