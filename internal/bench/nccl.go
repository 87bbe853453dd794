package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	ncclStarting = regexp.MustCompile(`^# Collective test (?:starting|concluded): (\w+)`)
	ncclMention  = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)*_perf\b`)
	ncclRank     = regexp.MustCompile(`^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)`)
	ncclOOB      = regexp.MustCompile(`^# Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)`)
	ncclAvgBus   = regexp.MustCompile(`^# Avg bus bandwidth\s*:\s*(\S+)`)
	ncclFailure  = regexp.MustCompile(`(?:^|\s)(?:Test )?(?:NCCL|CUDA) failure |\bTest failure \S+:\d+`)
)

// ncclLayout is the column layout of a result row.
type ncclLayout struct {
	known   bool // a header line was seen
	hasRoot bool
}

func parseNCCL(lines []line) Result {
	r := Result{Kind: KindNCCL}
	var layout ncclLayout
	var failure, warn, oobFailed, wrongMsg, launcher string
	footer := false
	hosts := map[string]bool{}
	maxRank := -1
	summary := map[string]float64{}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" {
			continue
		}
		if t[0] == '#' {
			if m := ncclStarting.FindStringSubmatch(t); m != nil && r.Tool == "" {
				r.Tool = m[1]
			}
			if m := ncclRank.FindStringSubmatch(t); m != nil {
				n, _ := strconv.Atoi(m[1])
				hosts[m[2]] = true
				maxRank = max(maxRank, n)
			}
			if strings.Contains(t, "algbw") && strings.Contains(t, "busbw") {
				layout = ncclLayout{known: true, hasRoot: strings.Contains(t, " root ")}
			}
			if m := ncclOOB.FindStringSubmatch(t); m != nil {
				footer = true
				if n, err := strconv.ParseFloat(m[1], 64); err == nil {
					summary[SumOutOfBounds] = n
				}
				if m[2] == "FAILED" && oobFailed == "" {
					oobFailed = t
				}
			}
			if m := ncclAvgBus.FindStringSubmatch(t); m != nil {
				footer = true
				if v, ok := parseFloat(m[1]); ok {
					summary[SumAvgBusBWGBps] = v
				}
			}
			continue
		}
		row, ok := NCCLRow{}, false
		if l.complete && t[0] >= '0' && t[0] <= '9' {
			row, ok = ncclRow(t, layout)
		}
		if !ok { // a result row is never an error line
			switch {
			case failure == "" && strings.Contains(t, "failure") && ncclFailure.MatchString(t):
				failure = t
			case warn == "" && strings.Contains(t, "NCCL WARN"):
				warn = t
			case launcher == "" && launcherError(t):
				launcher = t
			}
			continue
		}
		r.NCCL = append(r.NCCL, row)
		if wrongMsg == "" {
			if row.OOPWrong != nil && *row.OOPWrong > 0 {
				wrongMsg = fmt.Sprintf("%d wrong elements out-of-place at %d bytes", *row.OOPWrong, row.Bytes)
			} else if row.IPWrong != nil && *row.IPWrong > 0 {
				wrongMsg = fmt.Sprintf("%d wrong elements in-place at %d bytes", *row.IPWrong, row.Bytes)
			}
		}
	}
	if r.Tool == "" {
		r.Tool = firstToolMention(lines, ncclMention)
	}
	if r.Tool == "" {
		r.Tool = ToolNCCLTestsNoName
	}
	if maxRank >= 0 {
		r.Info.Ranks = maxRank + 1
		r.Info.Nodes = len(hosts)
	}
	if len(r.NCCL) > 0 {
		best := r.NCCL[0].BusBW()
		for _, row := range r.NCCL[1:] {
			best = max(best, row.BusBW())
		}
		summary[SumMaxBusBWGBps] = best
	}
	r.Summary = summary
	// A WARN matters only when the run did not finish cleanly; a run that
	// printed its footer survived whatever was warned about.
	fatalWarn := ""
	if !footer {
		fatalWarn = warn
	}
	r.Error = firstNonEmpty(failure, launcher, oobFailed, wrongMsg, fatalWarn)
	if failure != "" && warn != "" && firstIndex(lines, warn) < firstIndex(lines, failure) {
		r.Error = warn // the WARN explains the failure that follows it
	}
	if r.Error == "" && len(r.NCCL) == 0 {
		r.Error = "no result rows found (output truncated or run did not finish)"
	}
	r.OK = r.Error == ""
	return r
}

// ncclRow parses one result row in any layout since nccl-tests 2.0:
// size count type redop [root] (time algbw busbw wrong|error) x2.
// Without a header the layout follows from the field count (12 or 13).
func ncclRow(t string, layout ncclLayout) (NCCLRow, bool) {
	f := strings.Fields(t)
	hasRoot := layout.hasRoot
	switch {
	case len(f) == 13:
		if !layout.known {
			hasRoot = true
		}
	case len(f) == 12:
		if !layout.known {
			hasRoot = false
		}
	default:
		return NCCLRow{}, false
	}
	want := 12
	if hasRoot {
		want = 13
	}
	if len(f) != want {
		return NCCLRow{}, false
	}
	size, ok1 := parseInt(f[0])
	count, ok2 := parseInt(f[1])
	if !ok1 || !ok2 || size < 0 {
		return NCCLRow{}, false
	}
	row := NCCLRow{Bytes: size, Count: count, Type: f[2], Redop: f[3]}
	i := 4
	if hasRoot {
		if _, ok := parseInt(f[4]); !ok {
			return NCCLRow{}, false
		}
		i = 5
	}
	var ok bool
	if row.OOPTimeUs, row.OOPAlgBWGBps, row.OOPBusBWGBps, row.OOPWrong, ok = ncclHalf(f[i : i+4]); !ok {
		return NCCLRow{}, false
	}
	if row.IPTimeUs, row.IPAlgBWGBps, row.IPBusBWGBps, row.IPWrong, ok = ncclHalf(f[i+4 : i+8]); !ok {
		return NCCLRow{}, false
	}
	return row, true
}

// ncclHalf parses "time algbw busbw wrong". wrong is an integer count
// (#wrong), "N/A" (-c 0) or, before nccl-tests 2.13, a float max error that
// is not a count (nil).
func ncclHalf(f []string) (time, alg, bus float64, wrong *int64, ok bool) {
	var ok1, ok2, ok3 bool
	time, ok1 = parseFloat(f[0])
	alg, ok2 = parseFloat(f[1])
	bus, ok3 = parseFloat(f[2])
	if !(ok1 && ok2 && ok3) {
		return 0, 0, 0, nil, false
	}
	if n, isInt := parseInt(f[3]); isInt {
		wrong = &n
	} else if _, isFloat := parseFloat(f[3]); !isFloat && f[3] != "N/A" {
		return 0, 0, 0, nil, false
	}
	return time, alg, bus, wrong, true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstIndex(lines []line, text string) int {
	for i, l := range lines {
		if strings.TrimSpace(l.text) == text {
			return i
		}
	}
	return -1
}
