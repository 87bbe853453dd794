package benchreport

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/chart"
)

// Scaling is the training scaling table of the input: every successful
// training result with a job throughput, by scenario and size.
func Scaling(in Input) []bench.ScalingRow {
	rows, _ := bench.ScalingTable(bench.ScalingPoints(in.Results, in.GPUsPerNode))
	return rows
}

// PrintScaling writes the scaling table as aligned text: nodes, GPUs,
// throughput, speed-up and efficiency against linear, per scenario.
func PrintScaling(w io.Writer, rows []bench.ScalingRow) error {
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tNODES\tGPUS\tTHROUGHPUT\tSPEEDUP\tEFFICIENCY\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%.2fx\t%.1f%%\t\n", r.Scenario, count(r.Nodes), count(r.GPUs),
			trimFloat(r.Throughput), r.Unit, r.Speedup, 100*r.Efficiency)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print scaling: %w", err)
	}
	return nil
}

func count(n int) string {
	if n <= 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// scalingAxis is GPUs when every row is sized by GPUs, else nodes; log2
// when the sizes span a factor of 8 or more (1, 2, 4, ... 64 nodes).
func scalingAxis(rows []bench.ScalingRow) (chart.Axis, func(bench.ScalingRow) float64) {
	byGPUs := true
	for _, r := range rows {
		byGPUs = byGPUs && r.By == "gpus"
	}
	a := chart.Axis{Label: "GPUs", TickLabel: chart.IntegerLabel}
	size := func(r bench.ScalingRow) float64 { return float64(r.GPUs) }
	if !byGPUs {
		a.Label = "Nodes"
		size = func(r bench.ScalingRow) float64 { return float64(r.Nodes) }
	}
	lo, hi := 0.0, 0.0
	for i, r := range rows {
		if s := size(r); i == 0 || s < lo {
			lo = s
		}
		hi = max(hi, size(r))
	}
	if lo > 0 && hi/lo >= 8 {
		a.Scale = chart.Log2
	}
	return a, size
}

// ScalingThroughputChart plots each scenario's job throughput against the
// GPU (or node) count, with linear scaling from the scenario's smallest run
// dashed beside it.
func ScalingThroughputChart(rows []bench.ScalingRow) (c chart.LineChart, ok bool) {
	x, size := scalingAxis(rows)
	unit := ""
	if len(rows) > 0 {
		unit = rows[0].Unit
	}
	c = chart.LineChart{Title: "Training throughput vs " + x.Label, X: x,
		Y: chart.Axis{Label: "Throughput", Unit: unit}, Legend: chart.LegendTopLeft}
	for _, sc := range scenarios(rows) {
		var s, ideal chart.Series
		s.Name, ideal.Name, ideal.Dashed = sc, sc+" (linear)", true
		var base bench.ScalingRow
		for _, r := range rows {
			if r.Scenario != sc {
				continue
			}
			if r.Base {
				base = r
			}
			s.X, s.Y = append(s.X, size(r)), append(s.Y, r.Throughput)
			if size(base) > 0 {
				ideal.X, ideal.Y = append(ideal.X, size(r)), append(ideal.Y, base.Throughput*size(r)/size(base))
			}
		}
		c.Series = append(c.Series, s)
		if len(ideal.X) > 1 {
			c.Series = append(c.Series, ideal)
		}
	}
	return c, len(rows) > 0
}

// ScalingEfficiencyChart plots each scenario's efficiency against linear
// (percent) with the pass mark as a reference.
func ScalingEfficiencyChart(rows []bench.ScalingRow, minEfficiency float64) (c chart.LineChart, ok bool) {
	x, size := scalingAxis(rows)
	c = chart.LineChart{Title: "Scaling efficiency vs " + x.Label, X: x,
		Y: chart.Axis{Label: "Efficiency against linear", Unit: "%", Min: 0, Max: 130}, Legend: chart.LegendTopRight}
	for _, sc := range scenarios(rows) {
		s := chart.Series{Name: sc}
		for _, r := range rows {
			if r.Scenario == sc {
				s.X, s.Y = append(s.X, size(r)), append(s.Y, 100*r.Efficiency)
			}
		}
		c.Series = append(c.Series, s)
	}
	c.Refs = append(c.Refs, chart.RefLine{Label: "linear 100%", Y: 100})
	if minEfficiency > 0 {
		c.Refs = append(c.Refs, chart.RefLine{Label: fmt.Sprintf("pass mark %g%%", 100*minEfficiency), Y: 100 * minEfficiency})
	}
	return c, len(rows) > 0
}

func scenarios(rows []bench.ScalingRow) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Scenario] {
			seen[r.Scenario] = true
			out = append(out, r.Scenario)
		}
	}
	return out
}
