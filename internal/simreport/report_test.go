package simreport

import (
	"context"
	"encoding/json"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/chart"
	"github.com/railyard-io/railyard/internal/sim"
	"github.com/railyard-io/railyard/machines"
)

func simulate(t *testing.T, mix ...sim.MixEntry) *sim.Result {
	t.Helper()
	topo, err := machines.Topology(context.Background(), "dgx-h100", 8)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sim.Config{Topology: topo, Machine: "dgx-h100", Nodes: 10, Pods: 1000, Seed: 1, Mix: mix})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestWriteReport(t *testing.T) {
	res := simulate(t)
	for _, f := range []chart.Format{chart.PNG, chart.SVG} {
		dir := filepath.Join(t.TempDir(), "report")
		paths, err := Write(dir, res, Options{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 5 || filepath.Base(paths[4]) != "index.html" {
			t.Fatalf("wrote %v", paths)
		}
		html, err := os.ReadFile(filepath.Join(dir, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"gpu-aware", "kubelet", "optimal", "classes." + string(f), "bandwidth." + string(f), "gdr." + string(f), "dgx-h100"} {
			if !strings.Contains(string(html), want) {
				t.Errorf("index.html lacks %q", want)
			}
		}
		// The results table is sim's: every column title, every cell, every note.
		hasTable(t, string(html), res.Table())
		if strings.Contains(string(html), "<h2>Jobs of several pods</h2>") {
			t.Error("index.html has a table of jobs without jobs of several pods")
		}
		for _, st := range res.Settings() {
			if !strings.Contains(string(html), "<td>"+template.HTMLEscapeString(st.Value)+"</td>") {
				t.Errorf("index.html lacks setting %s = %q", st.Name, st.Value)
			}
		}
		var back sim.Result
		if data, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil || json.Unmarshal(data, &back) != nil || len(back.Policies) != len(res.Policies) {
			t.Errorf("result.json unreadable or incomplete: %v", err)
		}
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil || st.Size() < 500 {
				t.Errorf("%s: %v, %d bytes", p, err, st.Size())
			}
		}
		png, _ := os.ReadFile(filepath.Join(dir, "classes."+string(f)))
		if f == chart.PNG && !strings.HasPrefix(string(png), "\x89PNG") {
			t.Error("classes.png is not a PNG")
		}
		if f == chart.SVG && !strings.Contains(string(png), "<svg") {
			t.Error("classes.svg is not an SVG")
		}
	}
}

func TestWriteRejectsBadInput(t *testing.T) {
	if _, err := Write(t.TempDir(), nil, Options{}); err == nil {
		t.Error("nil result accepted")
	}
	if _, err := Write(t.TempDir(), simulate(t), Options{Format: "gif"}); err == nil {
		t.Error("gif accepted")
	}
}

// hasTable checks that html shows every column title, note and row of tab.
func hasTable(t *testing.T, html string, tab sim.Table) {
	t.Helper()
	for _, c := range tab.Columns {
		if !strings.Contains(html, "<th>"+template.HTMLEscapeString(c.Title)+"</th>") {
			t.Errorf("index.html lacks column %q", c.Title)
		}
		if c.Note != "" && !strings.Contains(html, template.HTMLEscapeString(c.Note)) {
			t.Errorf("index.html lacks the note of %q", c.Title)
		}
	}
	for _, row := range tab.Rows {
		cells := ""
		for _, c := range row {
			cells += "<td>" + template.HTMLEscapeString(c) + "</td>"
		}
		if !strings.Contains(html, cells) {
			t.Errorf("index.html lacks row %q", row)
		}
	}
}

// With jobs of several pods the report also shows sim's table of jobs.
func TestWriteReportWithJobs(t *testing.T) {
	res := simulate(t, sim.MixEntry{GPUs: 1, Weight: 1}, sim.MixEntry{Pods: 2, GPUs: 4, Weight: 1})
	jobs, ok := res.JobTable()
	if !ok || len(jobs.Rows) != len(res.Policies) {
		t.Fatalf("job table %v (ok %v), want a row per policy", jobs.Rows, ok)
	}
	dir := t.TempDir()
	if _, err := Write(dir, res, Options{Format: chart.SVG}); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<h2>Jobs of several pods</h2>") {
		t.Error("index.html lacks the table of jobs")
	}
	hasTable(t, string(html), jobs)
}
