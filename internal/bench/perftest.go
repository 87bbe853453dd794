package bench

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MiBpsToGbps converts perftest's MiB/s (printed as "MB/sec" by old
// versions) to Gb/s: 1 MiB/s = 1048576 * 8 / 1e9 Gb/s.
const MiBpsToGbps = 0.008388608

var (
	// perftestTitle matches the test title line: "RDMA_Write BW Test",
	// "Send Latency Test", "RDMA_Write Bidirectional BW Test",
	// "RDMA_Write Post List BW Test", "Atomic FETCH_AND_ADD BW Test".
	perftestTitle   = regexp.MustCompile(`^(RDMA_Write|RDMA_Read|Send|Atomic(?: \w+)?)((?: Bidirectional| Post List)*) (BW|Latency) Test$`)
	perftestMention = regexp.MustCompile(`\bib_(?:write|read|send|atomic)_(?:bw|lat)\b`)
	perftestDevice  = regexp.MustCompile(`\bDevice\s*:\s*(\S+)`)
	perftestQPs     = regexp.MustCompile(`\bNumber of qps\s*:\s*(\d+)`)
	perftestMTU     = regexp.MustCompile(`^Mtu\s*:\s*(\d+)`)
	perftestLink    = regexp.MustCompile(`^Link type\s*:\s*(\w+)`)
	perftestTransp  = regexp.MustCompile(`\bTransport type\s*:\s*(\w+)`)
	perftestErrorRe = regexp.MustCompile(`^(?:[\w.]+: )?(?:Couldn't|Couldnt|Could not|Unable to|Failed to|Failed status|Completion with error|RDMA CM event error|ERRNO:|Error:|ERROR:|Problems with|No IB devices found|IB device \S+ not found)`)
)

func perftestError(t string) bool {
	if t == "" || (t[0] >= '0' && t[0] <= '9') {
		return false // a table row
	}
	return perftestErrorRe.MatchString(t) || strings.Contains(t, "got completion with error")
}

type perftestCol int

const (
	pcBytes perftestCol = iota
	pcIters
	pcMin
	pcMax
	pcTypical
	pcAvg
	pcStdev
	pcP99
	pcP999
	pcOther
)

// perftestLatColumns maps a latency table header to its columns. Perftest
// versions print 5 (bytes, iterations, min, max, typical), 9 (adds avg,
// stdev, 99%, 99.9%) or, with -D, "#bytes #iterations t_avg[usec] tps average".
func perftestLatColumns(header string) []perftestCol {
	var cols []perftestCol
	fields := strings.Fields(header)
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "#bytes"):
			cols = append(cols, pcBytes)
		case strings.HasPrefix(f, "#iterations"):
			cols = append(cols, pcIters)
		case strings.HasPrefix(f, "t_min"):
			cols = append(cols, pcMin)
		case strings.HasPrefix(f, "t_max"):
			cols = append(cols, pcMax)
		case strings.HasPrefix(f, "t_typical"):
			cols = append(cols, pcTypical)
		case strings.HasPrefix(f, "t_avg"):
			cols = append(cols, pcAvg)
		case strings.HasPrefix(f, "t_stdev"):
			cols = append(cols, pcStdev)
		case f == "99%":
			cols = append(cols, pcP99)
		case f == "99.9%":
			cols = append(cols, pcP999)
		case f == "tps":
			cols = append(cols, pcOther)
			if i+1 < len(fields) && fields[i+1] == "average" {
				i++
			}
		}
	}
	return cols
}

type perftestTable int

const (
	ptNone perftestTable = iota
	ptBW
	ptLat
)

func parsePerftest(lines []line) Result {
	r := Result{Kind: KindUnknown}
	table := ptNone
	var unit float64 = 1
	var latCols []perftestCol
	var firstErr string
	open := false // inside a table that has not printed its closing line
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			continue
		}
		if m := matchPerftestTitle(t); m != nil {
			if r.Tool == "" {
				r.Tool = perftestToolName(m[1], m[3])
			}
			if strings.Contains(m[2], "Bidirectional") {
				r.Info.Bidirectional = true
			}
			continue
		}
		if strings.HasPrefix(t, "#bytes") {
			open = true
			switch {
			case strings.Contains(t, "BW peak") || strings.Contains(t, "BW average"):
				table = ptBW
				unit = 1
				if !strings.Contains(t, "Gb/sec") {
					unit = MiBpsToGbps // "[MiB/sec]" or the older "[MB/sec]"
				}
			case strings.Contains(t, "t_"):
				table = ptLat
				latCols = perftestLatColumns(t)
			}
			continue
		}
		if strings.HasPrefix(t, "---") {
			open = false // the table's closing line
		}
		if firstErr == "" && perftestError(t) {
			firstErr = t
		}
		if strings.Contains(t, "Waiting for client to connect") || strings.Contains(t, "Waiting for client rdma_cm QP to connect") {
			r.Info.Server = true
		}
		perftestHeaderInfo(t, &r.Info)
		if !l.complete || t[0] < '0' || t[0] > '9' {
			continue
		}
		switch table {
		case ptBW:
			if row, ok := perftestBWRow(t, unit); ok {
				r.PerftestBW = append(r.PerftestBW, row)
			}
		case ptLat:
			if row, ok := perftestLatRow(t, latCols); ok {
				r.PerftestLat = append(r.PerftestLat, row)
			}
		}
	}
	if r.Tool == "" {
		r.Tool = firstToolMention(lines, perftestMention)
	}
	if r.Tool == "" {
		r.Tool = ToolPerftestNoName
	}
	switch {
	case len(r.PerftestBW) > 0 || table == ptBW:
		r.Kind = KindPerftestBW
	case len(r.PerftestLat) > 0 || table == ptLat:
		r.Kind = KindPerftestLat
	default:
		r.Kind = kindOf(r.Tool, nil)
	}
	r.Summary = perftestSummary(r)
	if firstErr == "" && open {
		firstErr = cutOff(r)
	}
	r.Error = firstErr
	if r.Error == "" && r.Rows() == 0 {
		r.Error = "no result rows found (output truncated or run did not finish)"
	}
	r.OK = r.Error == ""
	return r
}

// cutOff says why a table without its closing line is cut off: a sweep
// (-a: rows of several sizes) that stops before its end, whose largest
// rows are missing. Rows of one size without a closing line are a
// --run_infinitely run (one row per interval until it is stopped), not
// cut off.
func cutOff(r Result) string {
	var sizes []int64
	for _, row := range r.PerftestBW {
		sizes = append(sizes, row.Bytes)
	}
	for _, row := range r.PerftestLat {
		sizes = append(sizes, row.Bytes)
	}
	for _, b := range sizes {
		if b != sizes[0] {
			return fmt.Sprintf("output cut off after the %s row: the table has no closing line, so its larger messages are missing", FormatBytes(sizes[len(sizes)-1]))
		}
	}
	return ""
}

func matchPerftestTitle(t string) []string {
	if !strings.HasSuffix(t, " Test") {
		return nil
	}
	return perftestTitle.FindStringSubmatch(t)
}

func perftestToolName(op, kind string) string {
	name := "ib_"
	switch {
	case op == "RDMA_Write":
		name += "write"
	case op == "RDMA_Read":
		name += "read"
	case op == "Send":
		name += "send"
	default:
		name += "atomic"
	}
	if kind == "BW" {
		return name + "_bw"
	}
	return name + "_lat"
}

func perftestHeaderInfo(t string, info *Info) {
	if !strings.Contains(t, ":") {
		return
	}
	if m := perftestDevice.FindStringSubmatch(t); m != nil && info.Device == "" {
		info.Device = m[1]
	}
	if m := perftestQPs.FindStringSubmatch(t); m != nil {
		info.QPs, _ = strconv.Atoi(m[1])
	}
	if m := perftestTransp.FindStringSubmatch(t); m != nil {
		info.Transport = m[1]
	}
	if m := perftestMTU.FindStringSubmatch(t); m != nil {
		info.MTU, _ = strconv.Atoi(m[1])
	}
	if m := perftestLink.FindStringSubmatch(t); m != nil {
		info.LinkType = m[1]
	}
}

// perftestBWRow parses "bytes iterations peak avg msgrate [extra...]".
func perftestBWRow(t string, unit float64) (PerftestBWRow, bool) {
	f := strings.Fields(t)
	if len(f) < 5 {
		return PerftestBWRow{}, false
	}
	b, ok1 := parseInt(f[0])
	it, ok2 := parseInt(f[1])
	peak, ok3 := parseFloat(f[2])
	avg, ok4 := parseFloat(f[3])
	rate, ok5 := parseFloat(f[4])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || b < 0 {
		return PerftestBWRow{}, false
	}
	row := PerftestBWRow{Bytes: b, Iterations: it, BWAvgGbps: round(avg * unit), MsgRateMpps: rate}
	// 0.00 peak with a positive average means "not measured" (-D, -b, --run_infinitely).
	if !(peak == 0 && avg > 0) {
		row.BWPeakGbps = ptr(round(peak * unit))
	}
	return row, true
}

func perftestLatRow(t string, cols []perftestCol) (PerftestLatRow, bool) {
	f := strings.Fields(t)
	if len(cols) < 3 || len(f) < len(cols) {
		return PerftestLatRow{}, false
	}
	var row PerftestLatRow
	for i, c := range cols {
		switch c {
		case pcBytes, pcIters:
			v, ok := parseInt(f[i])
			if !ok {
				return PerftestLatRow{}, false
			}
			if c == pcBytes {
				row.Bytes = v
			} else {
				row.Iterations = v
			}
			continue
		}
		v, ok := parseFloat(f[i])
		if !ok {
			return PerftestLatRow{}, false
		}
		switch c {
		case pcMin:
			row.LatMinUs = ptr(v)
		case pcMax:
			row.LatMaxUs = ptr(v)
		case pcTypical:
			row.LatTypicalUs = ptr(v)
		case pcAvg:
			row.LatAvgUs = ptr(v)
		case pcP99:
			row.LatP99Us = ptr(v)
		case pcP999:
			row.LatP999Us = ptr(v)
		}
	}
	return row, true
}

func perftestSummary(r Result) map[string]float64 {
	s := map[string]float64{}
	if len(r.PerftestBW) > 0 {
		best := math.Inf(-1)
		for _, row := range r.PerftestBW {
			best = max(best, row.BWAvgGbps)
		}
		s[SumMaxBWAvgGbps] = best
	}
	best := math.Inf(1)
	for _, row := range r.PerftestLat {
		if row.LatTypicalUs != nil {
			best = min(best, *row.LatTypicalUs)
		}
	}
	if !math.IsInf(best, 1) {
		s[SumMinLatTypicalUs] = best
	}
	return s
}

// round keeps 9 significant decimals so unit conversions do not print
// binary noise (92.39 * 1 stays 92.39; 4362.49 MiB/s -> 36.595676...).
func round(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) || math.Abs(v) > 1e15 {
		return v
	}
	return math.Round(v*1e9) / 1e9
}
