package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Status is a check's verdict.
type Status string

// Statuses, from best to worst; Skip is a check that could not run.
const (
	OK   Status = "ok"
	Skip Status = "skip"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one verdict.
type Check struct {
	// ID names the check ("ports", "acs", ...); one ID may give several
	// checks (one per NIC, per GPU).
	ID      string `json:"id"`
	Subject string `json:"subject,omitempty"` // "mlx5_0", "GPU 0000:19:00.0"
	Status  Status `json:"status"`
	Summary string `json:"summary"`
	// Read lists what the check read ("sysfs class/infiniband/mlx5_0/ports/1/state: ACTIVE").
	Read []string `json:"read,omitempty"`
	// Fix says how to fix a warning or failure.
	Fix string `json:"fix,omitempty"`
	// NeedsRoot marks a check that needs root to run fully.
	NeedsRoot bool `json:"needsRoot,omitempty"`
}

// Report is every check of one run.
type Report struct {
	Checks []Check `json:"checks"`
}

// Exit codes of `railyard doctor`.
const (
	ExitOK       = 0
	ExitWarnings = 1
	ExitFailures = 2
)

// ExitCode is 2 with any failure, 1 with any warning, else 0.
func (r Report) ExitCode() int {
	code := ExitOK
	for _, c := range r.Checks {
		switch c.Status {
		case Fail:
			return ExitFailures
		case Warn:
			code = ExitWarnings
		}
	}
	return code
}

// Count returns how many checks have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes one line per check, then what was read and the fix of
// each check that is not ok.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSUBJECT\tSTATUS\tSUMMARY")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, orDash(c.Subject), strings.ToUpper(string(c.Status)), c.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Checks {
		if c.Status == OK {
			continue
		}
		fmt.Fprintf(w, "\n%s %s: %s\n", strings.ToUpper(string(c.Status)), c.ID, c.Summary)
		for _, rd := range c.Read {
			fmt.Fprintf(w, "  read: %s\n", rd)
		}
		if c.Fix != "" {
			fmt.Fprintf(w, "  fix:  %s\n", c.Fix)
		}
		if c.NeedsRoot {
			fmt.Fprintln(w, "  needs root: run as root for this check")
		}
	}
	_, err := fmt.Fprintf(w, "\n%d ok, %d warnings, %d failures, %d skipped\n", r.Count(OK), r.Count(Warn), r.Count(Fail), r.Count(Skip))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
