package bench

import (
	"math"
	"regexp"
	"strings"
)

// OSUMBpsToGbps converts OSU's MB/s (10^6 bytes per second) to Gb/s.
const OSUMBpsToGbps = 0.008

var (
	// osuTitle matches "# OSU MPI Bandwidth Test v7.2",
	// "# OSU MPI-CUDA Reduce Latency Test v7.3", "# OSU MPI_Put Latency Test".
	osuTitle    = regexp.MustCompile(`^# OSU (?:One Sided )?(?:MPI|OpenSHMEM|UPC\+\+|UPC|NCCL)(?:_(\w+))?(?:-\w+)? (.+?) Test(?: v[\d.]+)?\s*$`)
	osuMention  = regexp.MustCompile(`\bosu_[a-z_]+\b`)
	osuColSplit = regexp.MustCompile(`\s{2,}|\t+`)
	osuSpecial  = map[string]string{
		"Bandwidth":                                 "osu_bw",
		"Bi-Directional Bandwidth":                  "osu_bibw",
		"Latency":                                   "osu_latency",
		"Multi Latency":                             "osu_multi_lat",
		"Multi-threaded Latency":                    "osu_latency_mt",
		"Multi-process Latency":                     "osu_latency_mp",
		"Multiple Bandwidth / Message Rate":         "osu_mbw_mr",
		"Broadcast Latency":                         "osu_bcast",
		"All-to-All Personalized Exchange Latency":  "osu_alltoall",
		"All-to-Allv Personalized Exchange Latency": "osu_alltoallv",
		"All-to-Allw Personalized Exchange Latency": "osu_alltoallw",
	}
	osuBWTools = map[string]bool{"osu_bw": true, "osu_bibw": true, "osu_mbw_mr": true,
		"osu_put_bw": true, "osu_get_bw": true, "osu_put_bibw": true}
)

func osuToolIsBW(tool string) bool { return osuBWTools[tool] }

// osuToolName maps a title to the binary name: "Bandwidth" -> osu_bw,
// "Allreduce Latency" -> osu_allreduce, "Non-blocking Allreduce Latency" ->
// osu_iallreduce, MPI_Put "Latency" -> osu_put_latency.
func osuToolName(onesided, name string) string {
	if onesided != "" {
		op := strings.ToLower(onesided)
		switch {
		case strings.Contains(strings.ToLower(name), "bi-directional"):
			return "osu_" + op + "_bibw"
		case strings.Contains(name, "Bandwidth"):
			return "osu_" + op + "_bw"
		}
		return "osu_" + op + "_latency"
	}
	if t, ok := osuSpecial[name]; ok {
		return t
	}
	n := strings.TrimSuffix(name, " Latency")
	prefix := "osu_"
	if strings.HasPrefix(n, "Non-blocking ") {
		n = strings.TrimPrefix(n, "Non-blocking ")
		prefix = "osu_i"
	}
	n = strings.ToLower(strings.NewReplacer("-", "", " ", "_").Replace(n))
	if t, ok := osuSpecial[strings.TrimPrefix(name, "Non-blocking ")]; ok && prefix == "osu_i" {
		return "osu_i" + strings.TrimPrefix(t, "osu_")
	}
	return prefix + n
}

type osuCol int

const (
	ocSize osuCol = iota
	ocBW
	ocLatAvg
	ocLatMin
	ocLatMax
	ocValidation
	ocOther
)

func osuColumns(header string) []osuCol {
	h := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(header), "#"))
	var cols []osuCol
	for _, name := range osuColSplit.Split(h, -1) {
		switch {
		case name == "":
			continue
		case name == "Size":
			cols = append(cols, ocSize)
		case strings.Contains(name, "Bandwidth") || name == "MB/s": // also "Bi-Bandwidth (MB/s)"
			cols = append(cols, ocBW)
		case strings.HasPrefix(name, "Min Latency"):
			cols = append(cols, ocLatMin)
		case strings.HasPrefix(name, "Max Latency"):
			cols = append(cols, ocLatMax)
		case strings.HasPrefix(name, "Avg Latency") || strings.HasPrefix(name, "Latency"):
			cols = append(cols, ocLatAvg)
		case name == "Validation":
			cols = append(cols, ocValidation)
		default:
			cols = append(cols, ocOther)
		}
	}
	return cols
}

func parseOSU(lines []line) Result {
	r := Result{}
	var cols []osuCol
	var title, firstErr string
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			continue
		}
		if t[0] == '#' {
			if m := osuTitle.FindStringSubmatch(t); m != nil && r.Tool == "" {
				title = m[2]
				r.Tool = osuToolName(m[1], m[2])
			}
			if strings.HasPrefix(t, "# Size") {
				cols = osuColumns(t)
			}
			continue
		}
		if firstErr == "" && (launcherError(t) || strings.HasPrefix(t, "This test requires") ||
			strings.Contains(t, "Validation failed") || strings.HasPrefix(t, "Error ") || strings.HasPrefix(t, "ERROR")) {
			firstErr = t
		}
		if !l.complete || t[0] < '0' || t[0] > '9' {
			continue
		}
		if cols == nil && title != "" {
			// Truncated before the header: one value column, named by the title.
			cols = []osuCol{ocSize, ocLatAvg}
			if strings.Contains(title, "Bandwidth") {
				cols = []osuCol{ocSize, ocBW}
			}
		}
		row, failed, ok := osuRow(t, cols)
		if !ok {
			continue
		}
		r.OSU = append(r.OSU, row)
		if failed && firstErr == "" {
			firstErr = "validation failed: " + t
		}
	}
	if r.Tool == "" {
		r.Tool = firstToolMention(lines, osuMention)
	}
	if r.Tool == "" {
		r.Tool = ToolOSUNoName
	}
	r.Kind = KindOSULat
	if hasCol(cols, ocBW) || (cols == nil && osuToolIsBW(r.Tool)) {
		r.Kind = KindOSUBW
	}
	r.Summary = osuSummary(r.OSU)
	r.Error = firstErr
	if r.Error == "" && len(r.OSU) == 0 {
		r.Error = "no result rows found (output truncated or run did not finish)"
	}
	r.OK = r.Error == ""
	return r
}

func hasCol(cols []osuCol, c osuCol) bool {
	for _, x := range cols {
		if x == c {
			return true
		}
	}
	return false
}

// osuRow parses a row against its columns; failed is true when a
// Validation column says Fail.
func osuRow(t string, cols []osuCol) (row OSURow, failed, ok bool) {
	f := strings.Fields(t)
	if len(cols) < 2 || len(f) < len(cols) || cols[0] != ocSize {
		return OSURow{}, false, false
	}
	size, okSize := parseInt(f[0])
	if !okSize || size < 0 {
		return OSURow{}, false, false
	}
	row.Bytes = size
	for i, c := range cols[1:] {
		v := f[i+1]
		if c == ocValidation {
			failed = strings.EqualFold(v, "Fail")
			continue
		}
		if c == ocOther {
			continue
		}
		x, okV := parseFloat(v)
		if !okV {
			return OSURow{}, false, false
		}
		switch c {
		case ocBW:
			row.BWGbps = ptr(round(x * OSUMBpsToGbps))
		case ocLatAvg:
			row.LatAvgUs = ptr(x)
		case ocLatMin:
			row.LatMinUs = ptr(x)
		case ocLatMax:
			row.LatMaxUs = ptr(x)
		}
	}
	if row.BWGbps == nil && row.LatAvgUs == nil {
		return OSURow{}, false, false
	}
	return row, failed, true
}

func osuSummary(rows []OSURow) map[string]float64 {
	s := map[string]float64{}
	bw, lat := math.Inf(-1), math.Inf(1)
	for _, r := range rows {
		if r.BWGbps != nil {
			bw = max(bw, *r.BWGbps)
		}
		if r.LatAvgUs != nil {
			lat = min(lat, *r.LatAvgUs)
		}
	}
	if !math.IsInf(bw, -1) {
		s[SumMaxBWGbps] = bw
	}
	if !math.IsInf(lat, 1) {
		s[SumMinLatAvgUs] = lat
	}
	return s
}
