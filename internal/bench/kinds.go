package bench

import (
	"encoding/json"
	"fmt"
	"strings"
)

// kindRow is everything the package decides by a result's kind: how its
// rows are found, written and read back, checked, compared, judged and
// printed. kinds holds one row per kind, in the order kinds are
// recognised (the first match wins).
type kindRow struct {
	kind Kind
	// family is the suite whose text output has results of this kind
	// (FamilyUnknown: read from JSON only).
	family Family
	// rowField is a --json row field that picks this kind when results
	// are read back (no earlier kind's rows have it).
	rowField string
	// tool says whether a tool name is of this kind (results without
	// rows).
	tool func(string) bool
	// rows is the result's row slice of this kind.
	rows func(*Result) rowSlice
	// check finds a value no tool prints: a negative size, bandwidth,
	// latency or throughput.
	check func(Result) error
	// headline is the one number results of this kind are compared by.
	headline func(Result, int64) (Metric, bool)
	// verdict, when set, is the kind's own check of a successful result.
	verdict func(JudgeInput, Labelled) Verdict
	// columns and cells are the kind's text table (bench parse).
	columns func(Result) []string
	cells   func(Result) [][]string
}

var kinds = []kindRow{
	{
		kind: KindPerftestBW, family: FamilyPerftest, rowField: "bw_avg_gbps",
		tool: func(t string) bool { return strings.HasPrefix(t, "ib_") && strings.HasSuffix(t, "_bw") },
		rows: func(r *Result) rowSlice { return slice[PerftestBWRow]{&r.PerftestBW} },
		check: func(r Result) error {
			for _, row := range r.PerftestBW {
				if err := nonNegative(row.Bytes,
					value{"iterations", float64(row.Iterations)},
					value{"bandwidth", row.BWAvgGbps},
					value{"peak bandwidth", deref(row.BWPeakGbps)},
					value{"message rate", row.MsgRateMpps}); err != nil {
					return err
				}
			}
			return nil
		},
		headline: func(r Result, large int64) (Metric, bool) {
			bw, _, ok := LargeMessageBW(r.PerftestBW, large)
			return Metric{"large-message bandwidth", bw, "Gb/s", true}, ok
		},
		verdict: lineRateVerdict,
		columns: fixed("bytes", "iterations", "peak Gb/s", "avg Gb/s", "Mpps"),
		cells: func(r Result) [][]string {
			return cellsOf(r.PerftestBW, func(row PerftestBWRow) []string {
				return []string{fmt.Sprint(row.Bytes), fmt.Sprint(row.Iterations), opt(row.BWPeakGbps), g(row.BWAvgGbps), g(row.MsgRateMpps)}
			})
		},
	},
	{
		kind: KindPerftestLat, family: FamilyPerftest, rowField: "lat_typical_us",
		tool: func(t string) bool { return strings.HasPrefix(t, "ib_") && strings.HasSuffix(t, "_lat") },
		rows: func(r *Result) rowSlice { return slice[PerftestLatRow]{&r.PerftestLat} },
		check: func(r Result) error {
			for _, row := range r.PerftestLat {
				if err := nonNegative(row.Bytes,
					value{"iterations", float64(row.Iterations)},
					value{"minimum latency", deref(row.LatMinUs)},
					value{"maximum latency", deref(row.LatMaxUs)},
					value{"typical latency", deref(row.LatTypicalUs)},
					value{"average latency", deref(row.LatAvgUs)},
					value{"99% latency", deref(row.LatP99Us)},
					value{"99.9% latency", deref(row.LatP999Us)}); err != nil {
					return err
				}
			}
			return nil
		},
		headline: summaryMetric(SumMinLatTypicalUs, "typical latency", "us", false),
		columns:  fixed("bytes", "iterations", "min us", "typical us", "avg us", "99% us", "99.9% us", "max us"),
		cells: func(r Result) [][]string {
			return cellsOf(r.PerftestLat, func(row PerftestLatRow) []string {
				return []string{fmt.Sprint(row.Bytes), fmt.Sprint(row.Iterations), opt(row.LatMinUs), opt(row.LatTypicalUs),
					opt(row.LatAvgUs), opt(row.LatP99Us), opt(row.LatP999Us), opt(row.LatMaxUs)}
			})
		},
	},
	{
		kind: KindNCCL, family: FamilyNCCL, rowField: "oop_busbw_GBps",
		tool: func(t string) bool { return t == ToolNCCLTestsNoName || strings.HasSuffix(t, "_perf") },
		rows: func(r *Result) rowSlice { return slice[NCCLRow]{&r.NCCL} },
		check: func(r Result) error {
			for _, row := range r.NCCL {
				if err := nonNegative(row.Bytes,
					value{"count", float64(row.Count)},
					value{"out-of-place time", row.OOPTimeUs},
					value{"out-of-place algorithm bandwidth", row.OOPAlgBWGBps},
					value{"out-of-place bus bandwidth", row.OOPBusBWGBps},
					value{"in-place time", row.IPTimeUs},
					value{"in-place algorithm bandwidth", row.IPAlgBWGBps},
					value{"in-place bus bandwidth", row.IPBusBWGBps}); err != nil {
					return err
				}
			}
			return nil
		},
		headline: summaryMetric(SumMaxBusBWGBps, "peak bus bandwidth", "GB/s", true),
		verdict:  ncclVerdict,
		columns:  fixed("bytes", "type", "redop", "oop us", "oop busbw GB/s", "ip us", "ip busbw GB/s", "wrong"),
		cells: func(r Result) [][]string {
			return cellsOf(r.NCCL, func(row NCCLRow) []string {
				return []string{fmt.Sprint(row.Bytes), row.Type, row.Redop, g(row.OOPTimeUs), g(row.OOPBusBWGBps), g(row.IPTimeUs), g(row.IPBusBWGBps), wrong(row)}
			})
		},
	},
	{
		kind: KindOSUBW, family: FamilyOSU, rowField: "bw_gbps",
		tool:     func(t string) bool { return strings.HasPrefix(t, "osu_") && osuToolIsBW(t) },
		rows:     func(r *Result) rowSlice { return slice[OSURow]{&r.OSU} },
		check:    checkOSU,
		headline: summaryMetric(SumMaxBWGbps, "peak bandwidth", "Gb/s", true),
		verdict:  osuBWVerdict,
		columns:  fixed("bytes", "Gb/s"),
		cells: func(r Result) [][]string {
			return cellsOf(r.OSU, func(row OSURow) []string { return []string{fmt.Sprint(row.Bytes), opt(row.BWGbps)} })
		},
	},
	{
		kind: KindOSULat, family: FamilyOSU, rowField: "lat_avg_us",
		tool:     func(t string) bool { return strings.HasPrefix(t, "osu_") },
		rows:     func(r *Result) rowSlice { return slice[OSURow]{&r.OSU} },
		check:    checkOSU,
		headline: summaryMetric(SumMinLatAvgUs, "lowest average latency", "us", false),
		verdict:  osuLatVerdict,
		columns:  fixed("bytes", "avg us", "min us", "max us"),
		cells: func(r Result) [][]string {
			return cellsOf(r.OSU, func(row OSURow) []string {
				return []string{fmt.Sprint(row.Bytes), opt(row.LatAvgUs), opt(row.LatMinUs), opt(row.LatMaxUs)}
			})
		},
	},
	{
		kind: KindTraining, family: FamilyTraining, rowField: "throughput",
		tool: func(t string) bool { return trainingTools[t] },
		rows: func(r *Result) rowSlice { return slice[TrainingRow]{&r.Training} },
		check: func(r Result) error {
			for _, row := range r.Training {
				if row.Throughput < 0 {
					return fmt.Errorf("negative throughput %g at step %d: no tool prints that (a broken or edited log)", row.Throughput, row.Step)
				}
			}
			return nil
		},
		headline: func(r Result, _ int64) (Metric, bool) {
			v, ok := r.Summary[SumTotalThroughput]
			return Metric{"job throughput", v, r.Info.Unit, true}, ok
		},
		columns: func(r Result) []string { return []string{"step", r.Info.Unit, "per"} },
		cells: func(r Result) [][]string {
			return cellsOf(r.Training, func(row TrainingRow) []string { return []string{fmt.Sprint(row.Step), g(row.Throughput), row.Scope} })
		},
	},
	{
		kind: KindIperf3, family: FamilyUnknown, rowField: "gbps",
		tool: func(t string) bool { return t == ToolIperf3 },
		rows: func(r *Result) rowSlice { return slice[IperfRow]{&r.Iperf} },
		check: func(r Result) error {
			for _, row := range r.Iperf {
				if row.Gbps < 0 {
					return fmt.Errorf("negative bandwidth %g Gb/s in the interval from %g s: no tool prints that (a broken or edited output)", row.Gbps, row.StartS)
				}
			}
			return nil
		},
		headline: func(r Result, _ int64) (Metric, bool) {
			v, ok := r.Summary[SumReceivedGbps]
			if !ok {
				v, ok = r.Summary[SumSentGbps]
			}
			return Metric{"TCP bandwidth", v, "Gb/s", true}, ok
		},
		columns: fixed("start s", "end s", "Gb/s", "retransmits", "omitted"),
		cells: func(r Result) [][]string {
			return cellsOf(r.Iperf, func(row IperfRow) []string {
				rt := "-"
				if row.Retransmits != nil {
					rt = fmt.Sprint(*row.Retransmits)
				}
				return []string{g(row.StartS), g(row.EndS), g(row.Gbps), rt, fmt.Sprint(row.Omitted)}
			})
		},
	},
}

// familyRow is one suite Parse recognises in text output: its name in
// messages, its parser, and whether it prints a result table of its own
// (two suites' tables in one log fail the result). The kinds of its
// results are the rows of kinds naming it.
type familyRow struct {
	family Family
	name   string
	parse  func([]line) Result
	table  bool
}

// families holds one row per Family but FamilyUnknown, in the order
// detectTables lists the tables it saw.
var families = []familyRow{
	{FamilyPerftest, "perftest", parsePerftest, true},
	{FamilyNCCL, "nccl-tests", parseNCCL, true},
	{FamilyOSU, "OSU", parseOSU, true},
	{FamilyTraining, "training", parseTraining, false},
}

// familyRowOf returns the table row of family f.
func familyRowOf(f Family) (familyRow, bool) {
	for _, row := range families {
		if row.family == f {
			return row, true
		}
	}
	return familyRow{}, false
}

// familyList names the families for a message: "a, b, c or d".
func familyList() string {
	names := make([]string, 0, len(families))
	for _, f := range families {
		names = append(names, f.name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// kindRowOf returns the table row of kind k.
func kindRowOf(k Kind) (kindRow, bool) {
	for _, row := range kinds {
		if row.kind == k {
			return row, true
		}
	}
	return kindRow{}, false
}

// rowSlice is one kind's rows inside a Result.
type rowSlice interface {
	marshal() ([]byte, error) // "[]" for none
	unmarshal([]byte) error
}

type slice[T any] struct{ p *[]T }

func (s slice[T]) marshal() ([]byte, error) {
	if *s.p == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(*s.p)
}

func (s slice[T]) unmarshal(b []byte) error { return json.Unmarshal(b, s.p) }

// Table returns the result's rows as text cells under their column names
// (bench parse's table); none for a kind without rows.
func (r Result) Table() (columns []string, cells [][]string) {
	k, ok := kindRowOf(r.Kind)
	if !ok {
		return nil, nil
	}
	return k.columns(r), k.cells(r)
}

// checkValues returns an error for a value no tool prints (a negative
// size or bandwidth: "-18.7% of line rate" otherwise).
func checkValues(r Result) error {
	if k, ok := kindRowOf(r.Kind); ok {
		return k.check(r)
	}
	return nil
}

// checked fails a parsed result whose values no tool prints.
func checked(r Result) Result {
	if err := checkValues(r); err != nil && r.Error == "" {
		r.Error, r.OK = err.Error(), false
	}
	return r
}

func checkOSU(r Result) error {
	for _, row := range r.OSU {
		if err := nonNegative(row.Bytes,
			value{"bandwidth", deref(row.BWGbps)},
			value{"average latency", deref(row.LatAvgUs)},
			value{"minimum latency", deref(row.LatMinUs)},
			value{"maximum latency", deref(row.LatMaxUs)}); err != nil {
			return err
		}
	}
	return nil
}

// value is a named number of a row, for nonNegative's message.
type value struct {
	name string
	v    float64
}

// nonNegative checks a row's message size and its values.
func nonNegative(bytes int64, values ...value) error {
	if bytes < 0 {
		return fmt.Errorf("negative message size %d: no tool prints that (a broken or edited output)", bytes)
	}
	for _, x := range values {
		if x.v < 0 {
			return fmt.Errorf("negative %s %g for %d bytes: no tool prints that (a broken or edited output)", x.name, x.v, bytes)
		}
	}
	return nil
}

func summaryMetric(key, name, unit string, higherBetter bool) func(Result, int64) (Metric, bool) {
	return func(r Result, _ int64) (Metric, bool) {
		v, ok := r.Summary[key]
		return Metric{name, v, unit, higherBetter}, ok
	}
}

func fixed(columns ...string) func(Result) []string {
	return func(Result) []string { return columns }
}

func cellsOf[T any](rows []T, cells func(T) []string) [][]string {
	out := make([][]string, 0, len(rows))
	for _, row := range rows {
		out = append(out, cells(row))
	}
	return out
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func opt(v *float64) string {
	if v == nil {
		return "-"
	}
	return g(*v)
}

func g(v float64) string { return fmt.Sprintf("%g", v) }

func wrong(r NCCLRow) string {
	if r.OOPWrong == nil && r.IPWrong == nil {
		return "N/A"
	}
	var n int64
	if r.OOPWrong != nil {
		n += *r.OOPWrong
	}
	if r.IPWrong != nil {
		n += *r.IPWrong
	}
	return fmt.Sprint(n)
}
