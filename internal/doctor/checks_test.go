package doctor

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// tableIDs are the table's check ids, each with its row.
func tableIDs(t *testing.T) map[string]int {
	t.Helper()
	ids := map[string]int{}
	for i, r := range table {
		if len(r.ids) == 0 || r.line == "" || r.run == nil {
			t.Errorf("row %d %v: ids, line or function missing", i, r.ids)
		}
		for _, id := range r.ids {
			if _, dup := ids[id]; dup {
				t.Errorf("check id %s in two rows", id)
			}
			ids[id] = i
		}
	}
	return ids
}

// Every line a ready node's report holds carries an id of the table, in
// the table's order: the table is what runs.
func TestReportLinesAreTheTablesChecks(t *testing.T) {
	ids := tableIDs(t)
	last := 0
	for _, c := range newEnv(t).run().Checks {
		row, ok := ids[c.ID]
		switch {
		case !ok:
			t.Errorf("check %s %s is not in the table (checks.go)", c.ID, c.Subject)
		case row < last:
			t.Errorf("check %s %s out of the table's order", c.ID, c.Subject)
		default:
			last = row
		}
	}
}

// doc.go lists every check by its ids, and docs/doctor.md has a row for
// each; neither names a check the table lacks.
func TestDocsNameEveryCheck(t *testing.T) {
	t.Parallel()
	ids := tableIDs(t)
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/doctor.md")
	if err != nil {
		t.Fatal(err)
	}
	// doc.go's list: "//   - id, id: line".
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//   - ([a-z0-9, -]+):`).FindAllStringSubmatch(string(doc), -1) {
		for _, id := range strings.Split(m[1], ", ") {
			listed[id] = true
		}
	}
	// docs/doctor.md's table of checks: "| `id`, `id` | ...".
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| ((?:`[a-z0-9-]+`(?:, )?)+) \\|").FindAllStringSubmatch(string(page), -1) {
		for _, id := range strings.Split(m[1], ", ") {
			rows[strings.Trim(id, "`")] = true
		}
	}
	for id := range ids {
		if !listed[id] {
			t.Errorf("doc.go does not list check %s", id)
		}
		if !rows[id] {
			t.Errorf("docs/doctor.md has no row for check %s", id)
		}
	}
	for id := range listed {
		if _, ok := ids[id]; !ok {
			t.Errorf("doc.go lists %s, which is not in the table", id)
		}
	}
	for id := range rows {
		if _, ok := ids[id]; !ok {
			t.Errorf("docs/doctor.md has a row for %s, which is not in the table", id)
		}
	}
}
