package benchreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/chart"
)

// Input is what a report shows.
type Input struct {
	Title        string
	Results      []bench.Labelled
	LineRateGbps float64
	// LineRateSource says where the line rate came from ("--line-rate-gbps",
	// "machine dgx-h100", "sysfs /sys: mlx5_0 port 1").
	LineRateSource string
	NICs           int
	// GPUsPerNode sizes training runs whose log does not state its GPU
	// count (see bench.ScalingPoints).
	GPUsPerNode int
	Verdicts    []bench.Verdict
	Thresholds  bench.Thresholds
	// Profile names the profile whose pass marks judged ("" for the
	// defaults); ProfileSource says how it was chosen.
	Profile       string
	ProfileSource string
}

// Peak is one row of the table of peaks.
type Peak struct {
	Scenario string
	Tool     string
	OK       bool
	Rows     int
	Metric   string
	Value    string
	Error    string
	Source   string
}

// Peaks summarises every result by its headline number.
func Peaks(in Input) []Peak {
	large := in.Thresholds.LargeMessageBytes
	if large <= 0 {
		large = bench.DefaultLargeBytes
	}
	var out []Peak
	for _, l := range in.Results {
		p := Peak{Scenario: l.Scenario, Tool: l.Result.Tool, OK: l.Result.OK, Rows: l.Result.Rows(), Error: l.Result.Error, Source: l.Result.Source}
		if m, ok := bench.HeadlineMetric(l.Result, large); ok {
			p.Metric = m.Name
			p.Value = fmt.Sprintf("%s %s", trimFloat(m.Value), m.Unit)
		}
		out = append(out, p)
	}
	return out
}

// trimFloat prints a value as the verdicts do (bench.FormatValue).
func trimFloat(v float64) string { return bench.FormatValue(v) }

// chartFile is a chart written in both formats under one base name.
type chartFile struct {
	Title string
	Base  string // "bandwidth": bandwidth.svg and bandwidth.png
}

// Write renders the report into dir: report.html, report.json and one
// PNG and SVG per chart that has data. It returns the files written.
//
// Nothing partial is left behind: the files are rendered into a staging
// directory and moved into dir only when all of them are written. A new
// dir appears whole (one rename); in an existing dir each file is
// replaced by a rename and other files are left alone.
func Write(dir string, in Input) ([]string, error) {
	js, err := json.MarshalIndent(jsonReport(in), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report json: %w", err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("report dir: %w", err)
	}
	_, statErr := os.Stat(dir)
	exists := statErr == nil
	stageIn := parent
	if exists {
		stageIn = dir // same file system as the files it replaces
	}
	stage, err := os.MkdirTemp(stageIn, ".railyard-report-")
	if err != nil {
		return nil, fmt.Errorf("report dir: %w", err)
	}
	defer os.RemoveAll(stage) // gone after the move; on failure, everything
	names, err := render(stage, in, js)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := os.Chmod(stage, 0o755); err != nil {
			return nil, fmt.Errorf("report dir: %w", err)
		}
		if err := os.Rename(stage, dir); err != nil {
			return nil, fmt.Errorf("report dir: %w", err)
		}
	} else {
		for _, n := range names { // a rename onto a directory would fail half-way
			if st, err := os.Lstat(filepath.Join(dir, n)); err == nil && st.IsDir() {
				return nil, fmt.Errorf("write report: %s is a directory", filepath.Join(dir, n))
			}
		}
		for _, n := range names {
			if err := os.Rename(filepath.Join(stage, n), filepath.Join(dir, n)); err != nil {
				return nil, fmt.Errorf("write report: %w", err)
			}
		}
	}
	files := make([]string, len(names))
	for i, n := range names {
		files[i] = filepath.Join(dir, n)
	}
	return files, nil
}

// render writes every file of the report into dir and returns their
// names, report.json last.
func render(dir string, in Input, js []byte) ([]string, error) {
	var files []string
	var charts []chartFile
	add := func(base string, c chart.LineChart, ok bool) error {
		if !ok {
			return nil
		}
		for _, ext := range []string{".png", ".svg"} {
			if err := chart.Save(filepath.Join(dir, base+ext), c, chart.Size{}); err != nil {
				return fmt.Errorf("chart %s: %w", base, err)
			}
			files = append(files, base+ext)
		}
		charts = append(charts, chartFile{Title: c.Title, Base: base})
		return nil
	}
	bw, ok := BandwidthChart(in.Results, in.LineRateGbps)
	if err := add("bandwidth", bw, ok); err != nil {
		return files, err
	}
	lat, ok := LatencyChart(in.Results)
	if err := add("latency", lat, ok); err != nil {
		return files, err
	}
	bus, ok := BusBWChart(in.Results, in.LineRateGbps, in.NICs)
	if err := add("nccl-busbw", bus, ok); err != nil {
		return files, err
	}
	nlat, ok := NCCLLatencyChart(in.Results)
	if err := add("nccl-latency", nlat, ok); err != nil {
		return files, err
	}
	scaling := Scaling(in)
	tput, ok := ScalingThroughputChart(scaling)
	if err := add("scaling-throughput", tput, ok); err != nil {
		return files, err
	}
	eff, ok := ScalingEfficiencyChart(scaling, minEfficiency(in))
	if err := add("scaling-efficiency", eff, ok); err != nil {
		return files, err
	}

	var html bytes.Buffer
	if err := renderHTML(&html, in, charts); err != nil {
		return files, err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), html.Bytes(), 0o644); err != nil {
		return files, fmt.Errorf("write report: %w", err)
	}
	files = append(files, "report.html")
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return files, fmt.Errorf("write report: %w", err)
	}
	return append(files, "report.json"), nil
}

type jsonScenario struct {
	Scenario string       `json:"scenario"`
	Result   bench.Result `json:"result"`
}

func jsonReport(in Input) any {
	var rs []jsonScenario
	for _, l := range in.Results {
		rs = append(rs, jsonScenario{l.Scenario, l.Result})
	}
	return struct {
		LineRateGbps float64            `json:"line_rate_gbps,omitempty"`
		NICs         int                `json:"nics,omitempty"`
		Profile      string             `json:"profile,omitempty"`
		Results      []jsonScenario     `json:"results"`
		Scaling      []bench.ScalingRow `json:"scaling,omitempty"`
		Verdicts     []bench.Verdict    `json:"verdicts"`
	}{in.LineRateGbps, in.NICs, in.Profile, rs, Scaling(in), in.Verdicts}
}

//go:embed report.html.tmpl
var reportTemplate string

var tmpl = template.Must(template.New("report").Parse(reportTemplate))

func renderHTML(w io.Writer, in Input, charts []chartFile) error {
	if in.Thresholds.LargeMessageBytes <= 0 {
		in.Thresholds.LargeMessageBytes = bench.DefaultLargeBytes
	}
	title := in.Title
	if title == "" {
		title = "Railyard benchmark report"
	}
	data := struct {
		Title    string
		In       Input
		Peaks    []Peak
		Scaling  []scalingCell
		Charts   []chartFile
		Failed   bool
		Verdicts []bench.Verdict
	}{title, in, Peaks(in), scalingCells(Scaling(in)), charts, bench.Failed(in.Verdicts), in.Verdicts}
	if err := tmpl.Execute(w, data); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// PrintVerdicts writes the verdicts as an aligned text table.
func PrintVerdicts(w io.Writer, vs []bench.Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tSCENARIO\tTOOL\tREASON")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.ToUpper(string(v.Status)), v.Check, v.Scenario, v.Tool, v.Reason)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print verdicts: %w", err)
	}
	return nil
}

func minEfficiency(in Input) float64 {
	if v := in.Thresholds.MinScalingEfficiency; v > 0 {
		return v
	}
	return bench.DefaultThresholds().MinScalingEfficiency
}

// scalingCell is one row of the HTML scaling table, formatted.
type scalingCell struct {
	Scenario, Nodes, GPUs, Throughput, Speedup, Efficiency string
	Base                                                   bool
}

func scalingCells(rows []bench.ScalingRow) []scalingCell {
	out := make([]scalingCell, len(rows))
	for i, r := range rows {
		out[i] = scalingCell{Scenario: r.Scenario, Nodes: count(r.Nodes), GPUs: count(r.GPUs),
			Throughput: trimFloat(r.Throughput) + " " + r.Unit, Speedup: fmt.Sprintf("%.2fx", r.Speedup),
			Efficiency: fmt.Sprintf("%.1f%%", 100*r.Efficiency), Base: r.Base}
	}
	return out
}
