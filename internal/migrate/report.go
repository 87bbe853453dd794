package migrate

import (
	"fmt"
	"io"
	"strings"
)

// Action is what happened to one field of the input.
type Action string

// Actions, from harmless to lossy.
const (
	// Changed: mapped to Railyard's equivalent (renamed, defaulted).
	Changed Action = "changed"
	// Note: mapped, but on an assumption or with a difference in behaviour
	// the operator should check.
	Note Action = "note"
	// Dropped: a field (or value) with no Railyard equivalent; the pool is
	// written without it.
	Dropped Action = "dropped"
	// Skipped: the whole resource cannot be served by Railyard; no pool.
	Skipped Action = "skipped"
)

// Entry is one line of the report.
type Entry struct {
	// Resource is the SR-IOV resource ("intel.com/sriov_a"), or "" for the
	// whole file.
	Resource string `json:"resource,omitempty"`
	// Field is the input field's path ("selectors[0].linkTypes").
	Field  string `json:"field"`
	Action Action `json:"action"`
	// Message says what became of it and why.
	Message string `json:"message"`
}

// Report is everything ConvertSRIOVDP did, in input order.
type Report struct {
	Resources int     `json:"resources"`
	Pools     int     `json:"pools"`
	Entries   []Entry `json:"entries"`
}

func (r *Report) add(resource, field string, a Action, format string, args ...any) {
	r.Entries = append(r.Entries, Entry{Resource: resource, Field: field, Action: a, Message: fmt.Sprintf(format, args...)})
}

// Count returns how many entries have action a.
func (r *Report) Count(a Action) int {
	n := 0
	for _, e := range r.Entries {
		if e.Action == a {
			n++
		}
	}
	return n
}

// Lossy reports whether anything was dropped or skipped: the converted
// configuration does not do all that the input did.
func (r *Report) Lossy() bool { return r.Count(Dropped)+r.Count(Skipped) > 0 }

// Write prints the report for a person: a summary line, then the entries
// of each resource in input order, then those about the whole file, each
// as "<action>  <field>: <message>".
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d resource(s) -> %d pool(s): %d skipped, %d dropped, %d changed, %d note(s)\n",
		r.Resources, r.Pools, r.Count(Skipped), r.Count(Dropped), r.Count(Changed), r.Count(Note))
	var order []string
	groups := map[string][]Entry{}
	for _, e := range r.Entries {
		if _, ok := groups[e.Resource]; !ok && e.Resource != "" {
			order = append(order, e.Resource)
		}
		groups[e.Resource] = append(groups[e.Resource], e)
	}
	if len(groups[""]) > 0 {
		order = append(order, "")
	}
	for _, res := range order {
		title := res
		if res == "" {
			title = "whole file"
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		for _, e := range groups[res] {
			fmt.Fprintf(&b, "  %-7s  %s: %s\n", e.Action, e.Field, e.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
