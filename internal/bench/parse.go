package bench

import (
	"fmt"
	"strings"
)

// Family is a benchmark suite whose output Parse recognises.
type Family int

// Families.
const (
	FamilyUnknown Family = iota
	FamilyPerftest
	FamilyNCCL
	FamilyOSU
	FamilyTraining
)

// Parse detects which benchmark printed data and parses it. It never fails:
// unrecognised input gives a Result with Tool "unknown" and OK false.
// JSON input is read as perftest --out_json (in MiB/s: see Options) or
// iperf3 --json.
func Parse(data []byte) Result { return ParseWith(data, Options{}) }

func parseText(data []byte) Result {
	lines := splitLines(data)
	fam, tables := detectTables(lines)
	row, ok := familyRowOf(fam)
	if !ok {
		r := Result{Tool: ToolUnknown, Error: "no " + familyList() + " output recognised", Summary: map[string]float64{}}
		if r.NCCLTransport = parseNCCLDebug(lines); r.NCCLTransport != nil {
			r.Error += ": only NCCL INFO lines (in ncclTransport); bench parse --suite nccl-debug judges them alone"
		}
		return r
	}
	r := row.parse(lines)
	r.NCCLTransport = parseNCCLDebug(lines)
	// One result per output: the tables of another suite in the same log
	// would be dropped without a word.
	for _, other := range tables {
		if other != fam && r.Error == "" {
			o, _ := familyRowOf(other)
			r.Error = fmt.Sprintf("the output holds %s results too, which are not read: parse each tool's output on its own", o.name)
			r.OK = false
		}
	}
	return r
}

// ParsePerftest parses data as perftest (ib_*_bw, ib_*_lat) output.
func ParsePerftest(data []byte) Result { return parseLines(data, parsePerftest) }

// ParseNCCL parses data as nccl-tests output.
func ParseNCCL(data []byte) Result { return parseLines(data, parseNCCL) }

// ParseOSU parses data as OSU micro-benchmarks output.
func ParseOSU(data []byte) Result { return parseLines(data, parseOSU) }

// parseLines parses data's lines with one suite's parser, reads the NCCL
// INFO lines among them and checks the values.
func parseLines(data []byte, parse func([]line) Result) Result {
	lines := splitLines(data)
	r := parse(lines)
	r.NCCLTransport = parseNCCLDebug(lines)
	return checked(r)
}

// Detect reports which benchmark suite printed data.
func Detect(data []byte) Family { return detect(splitLines(data)) }

func detect(lines []line) Family {
	f, _ := detectTables(lines)
	return f
}

// detectTables scores strong markers first (table headers, titles,
// footers), then error messages only a given suite prints; it also
// returns every suite whose result table header (or training marker) it
// saw, in a fixed order.
func detectTables(lines []line) (Family, []Family) {
	var perf, nccl, osu, train int
	seen := map[Family]bool{}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		switch {
		case trainingMarker(t):
			train += 10
		case strings.HasPrefix(t, "# OSU "):
			osu += 10
			seen[FamilyOSU] = true
		case strings.Contains(t, "#bytes") && (strings.Contains(t, "BW peak") || strings.Contains(t, "t_min") || strings.Contains(t, "t_avg")):
			perf += 10
			seen[FamilyPerftest] = true
		case strings.HasPrefix(t, "#") && strings.Contains(t, "algbw") && strings.Contains(t, "busbw"):
			nccl += 10
			seen[FamilyNCCL] = true
		case strings.HasPrefix(t, "# Avg bus bandwidth"), strings.HasPrefix(t, "# Out of bounds values"),
			strings.HasPrefix(t, "# Collective test starting"), strings.HasPrefix(t, "# nccl-tests version"),
			strings.HasPrefix(t, "# nThread "), strings.HasPrefix(t, "nThread "):
			nccl += 5
		case matchPerftestTitle(t) != nil:
			perf += 5
		case strings.HasPrefix(t, "# Size") && (strings.Contains(t, "Latency") || strings.Contains(t, "MB/s")):
			osu += 5
		case strings.Contains(t, "NCCL failure"), strings.Contains(t, "NCCL WARN"), strings.Contains(t, "Test failure"):
			nccl += 2
		case strings.HasPrefix(t, "Dual-port"), strings.HasPrefix(t, "local address: LID"),
			strings.Contains(t, "Waiting for client to connect"), strings.HasPrefix(t, "Data ex. method"):
			perf += 2
		case perftestError(t):
			perf++
		case nccl == 0 && perf == 0 && osu == 0 && train == 0 && l.complete && t != "" && t[0] >= '0' && t[0] <= '9' && ncclRowShape(t):
			// Rows without their header, until a suite is recognised (kubectl logs --tail, a log
			// collector that drops "#" lines): nccl-tests rows name their
			// type and reduction, so they identify themselves.
			nccl += 3
		}
	}
	var tables []Family
	for _, f := range families {
		if f.table && seen[f.family] {
			tables = append(tables, f.family)
		}
	}
	switch {
	case perf == 0 && nccl == 0 && osu == 0 && train == 0:
		return FamilyUnknown, tables
	case train > 0 && train >= perf && train >= nccl && train >= osu:
		// A training job's NCCL warnings do not make it an nccl-tests run.
		return FamilyTraining, nil
	case osu >= perf && osu >= nccl:
		return FamilyOSU, tables
	case nccl >= perf:
		return FamilyNCCL, tables
	}
	return FamilyPerftest, tables
}

// ncclRowShape reports whether t parses as an nccl-tests result row in
// either column layout.
func ncclRowShape(t string) bool {
	_, ok := ncclRow(t, ncclLayout{})
	return ok
}
