package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// BarGroup is one named set of bars, one value per category.
type BarGroup struct {
	Name   string
	Values []float64
}

// BarChart draws grouped bars: one cluster per category, one colour per
// group.
type BarChart struct {
	Title      string
	X          Axis // label (and unit) of the categories; Scale is ignored
	Y          Axis
	Categories []string
	Groups     []BarGroup
	Legend     LegendPosition
}

var _ Chart = BarChart{}

// Plot builds the gonum plot.
func (c BarChart) Plot() (*plot.Plot, error) {
	p := newPlot(c.Title)
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	p.Add(grid)
	n := len(c.Groups)
	width := vg.Points(40)
	if n > 1 {
		width = vg.Points(max(8, 60/float64(n)))
	}
	lo, hi := 0.0, math.Inf(-1)
	for i, g := range c.Groups {
		if len(g.Values) != len(c.Categories) {
			return nil, fmt.Errorf("group %q: %d values for %d categories", g.Name, len(g.Values), len(c.Categories))
		}
		vals := make(plotter.Values, len(g.Values))
		for j, v := range g.Values {
			if !finite(v) || (c.Y.Scale != Linear && v <= 0) {
				v = 0
			}
			vals[j] = v
			lo, hi = min(lo, v), max(hi, v)
		}
		if len(vals) == 0 {
			continue
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", g.Name, err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(bars)
		p.Legend.Add(g.Name, bars)
	}
	if finite(hi) {
		hi += 0.05 * (hi - lo)
	}
	y := c.Y
	if y.Scale != Linear {
		y.Scale = Linear // bars need a zero baseline
	}
	configureAxis(&p.Y, y, lo, hi, 0)
	p.X.Label.Text = c.X.Title()
	if len(c.Categories) > 0 {
		p.NominalX(c.Categories...)
	}
	placeLegend(&p.Legend, c.Legend)
	return p, nil
}

// Histogram counts values into equal-width bins.
type Histogram struct {
	Title  string
	X      Axis // the measured quantity; Scale is ignored
	Y      Axis // zero value: "Count"
	Values []float64
	Bins   int // zero: 20
	// Normalize scales bar heights so the total area is 1.
	Normalize bool
}

var _ Chart = Histogram{}

// Plot builds the gonum plot.
func (h Histogram) Plot() (*plot.Plot, error) {
	p := newPlot(h.Title)
	p.Add(plotter.NewGrid())
	var vals plotter.Values
	for _, v := range h.Values {
		if finite(v) {
			vals = append(vals, v)
		}
	}
	bins := h.Bins
	if bins <= 0 {
		bins = 20
	}
	y := h.Y
	if y.Label == "" {
		y.Label = "Count"
	}
	y.Scale = Linear
	x := h.X
	x.Scale = Linear
	if len(vals) == 0 {
		configureAxis(&p.X, x, 0, 1, 0)
		configureAxis(&p.Y, y, 0, 1, 0)
		return p, nil
	}
	hist, err := plotter.NewHist(vals, bins)
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	if h.Normalize {
		hist.Normalize(1)
	}
	hist.FillColor = plotutil.Color(0)
	hist.LineStyle.Width = vg.Points(0.5)
	p.Add(hist)
	lo, hi := math.Inf(1), math.Inf(-1)
	top := 0.0
	for _, b := range hist.Bins {
		lo, hi, top = min(lo, b.Min), max(hi, b.Max), max(top, b.Weight)
	}
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	configureAxis(&p.X, x, lo, hi, 0)
	configureAxis(&p.Y, y, 0, top*1.05, 0)
	return p, nil
}
