package bench

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// line is one line of output after launcher prefixes are removed.
type line struct {
	text string
	// complete is false for a last line without a terminating newline: the
	// output was cut there, so the line never becomes a row.
	complete bool
}

// launcherPrefix matches what launchers put before each line: Slurm srun -l
// "0: ", Open MPI --tag-output "[1,0]<stdout>:", kubectl logs --prefix
// "[pod/name/container] ", torchrun --tee "[default0]:".
var launcherPrefix = regexp.MustCompile(`^\s*(?:\[\d+,\d+\]<std(?:out|err)>:\s?|\d+:\s|\[pod/[^\]\s]+\]\s|\[[a-z]+\d+\]:)`)

// splitLines splits output into lines, drops CRs and launcher prefixes, and
// undoes markdown escaping ("\#", "\*", "\-" at line start) that pasted
// outputs often carry.
func splitLines(data []byte) []line {
	n := bytes.Count(data, []byte{'\n'}) + 1
	out := make([]line, 0, n)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var raw []byte
		complete := true
		if i < 0 {
			raw, data, complete = data, nil, false
		} else {
			raw, data = data[:i], data[i+1:]
		}
		s := strings.TrimRight(string(raw), "\r")
		s = stripLauncherPrefix(s)
		if t := strings.TrimLeft(s, " \t"); len(t) > 1 && t[0] == '\\' && (t[1] == '#' || t[1] == '*' || t[1] == '-') {
			s = t[1:]
		}
		out = append(out, line{text: s, complete: complete})
	}
	return out
}

// stripLauncherPrefix removes one launcher prefix. Digit prefixes are
// checked by hand: data rows also start with spaces and digits, and a
// regular expression on every row would dominate parsing time.
func stripLauncherPrefix(s string) string {
	t := strings.TrimLeft(s, " \t")
	if t == "" {
		return s
	}
	if t[0] == '[' {
		if rest, ok := cutMPITag(t); ok {
			return rest
		}
		if loc := launcherPrefix.FindStringIndex(s); loc != nil {
			return s[loc[1]:]
		}
		return s
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(t) && t[i] == ':' && (t[i+1] == ' ' || t[i+1] == '\t') {
		return t[i+2:]
	}
	if i > 0 && i+1 == len(t) && t[i] == ':' {
		return ""
	}
	return s
}

// cutMPITag removes Open MPI's "[1,0]<stdout>:" (and one space after it)
// without a regular expression: with --tag-output it starts every line.
func cutMPITag(t string) (string, bool) {
	i := 1
	for pass := 0; pass < 2; pass++ {
		j := i
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		if j == i || j >= len(t) {
			return "", false
		}
		want := byte(',')
		if pass == 1 {
			want = ']'
		}
		if t[j] != want {
			return "", false
		}
		i = j + 1
	}
	rest := t[i:]
	for _, tag := range []string{"<stdout>:", "<stderr>:"} {
		if strings.HasPrefix(rest, tag) {
			return strings.TrimPrefix(rest[len(tag):], " "), true
		}
	}
	return "", false
}

// launcherError reports whether a line is an MPI launcher's or the OS's
// failure message, shared by nccl-tests and OSU outputs.
func launcherError(t string) bool {
	for _, m := range []string{
		"MPI_ABORT was invoked",
		"mpirun noticed that process",
		"mpirun has exited due to process",
		"Primary job  terminated normally, but",
		"*** An error occurred in",
		"ORTE has lost communication",
		"Segmentation fault",
		"(signal 11)",
		"Bus error",
	} {
		if strings.Contains(t, m) {
			return true
		}
	}
	return false
}

// parseFloat parses a table cell; "nan", "inf" and overflowing numbers
// are no measurement (and could not be written as JSON).
func parseFloat(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func parseInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

func ptr(v float64) *float64 { return &v }

// firstToolMention finds a binary name such as "ib_write_bw" or
// "all_reduce_perf" mentioned anywhere (a command line, a banner).
func firstToolMention(lines []line, re *regexp.Regexp) string {
	for _, l := range lines {
		if m := re.FindString(l.text); m != "" {
			return m
		}
	}
	return ""
}
