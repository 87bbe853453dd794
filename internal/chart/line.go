package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one named line of points. X and Y must have the same length;
// points with NaN or infinite values, or non-positive values on a log axis,
// are left out.
type Series struct {
	Name string
	X, Y []float64
	// Dashed draws the line dashed (for example a second metric of the same
	// scenario).
	Dashed bool
}

// RefLine is a horizontal reference line such as a link rate.
type RefLine struct {
	Label string
	Y     float64
}

// LegendPosition places the legend inside the plot area.
type LegendPosition int

// Legend positions.
const (
	LegendTopLeft LegendPosition = iota
	LegendTopRight
	LegendBottomLeft
	LegendBottomRight
)

// LineChart plots series against a shared x axis, with points marked.
type LineChart struct {
	Title  string
	X, Y   Axis
	Series []Series
	Refs   []RefLine
	Legend LegendPosition
}

var _ Chart = LineChart{}

// Plot builds the gonum plot.
func (c LineChart) Plot() (*plot.Plot, error) {
	p := newPlot(c.Title)
	p.Add(plotter.NewGrid())
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	dropX, dropY := 0, 0
	type drawn struct {
		name string
		xys  plotter.XYs
		i    int
		dash bool
	}
	var lines []drawn
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("series %q: %d x values, %d y values", s.Name, len(s.X), len(s.Y))
		}
		var xys plotter.XYs
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if !finite(x) || !finite(y) {
				continue
			}
			if c.X.Scale != Linear && x <= 0 {
				dropX++
				continue
			}
			if c.Y.Scale != Linear && y <= 0 {
				dropY++
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
			xlo, xhi, ylo, yhi = min(xlo, x), max(xhi, x), min(ylo, y), max(yhi, y)
		}
		lines = append(lines, drawn{s.Name, xys, i, s.Dashed})
	}
	for _, r := range c.Refs {
		if finite(r.Y) && (c.Y.Scale == Linear || r.Y > 0) {
			ylo, yhi = min(ylo, r.Y), max(yhi, r.Y)
		}
	}
	if c.Y.Scale == Linear && finite(ylo) && ylo > 0 {
		ylo = 0 // bandwidth-like values read best from zero
	}
	// Headroom above the data: a little so the top line does not touch the
	// frame, more when the legend sits at the top so it stays clear of the
	// lines and reference lines.
	room := 0.05
	if c.Legend == LegendTopLeft || c.Legend == LegendTopRight {
		room = 0.3
	}
	if finite(yhi) && c.Y.Scale == Linear {
		yhi += room * (yhi - ylo)
	}
	if finite(yhi) && finite(ylo) && c.Y.Scale != Linear && ylo > 0 && yhi > 0 {
		yhi *= math.Pow(yhi/ylo, room) * (1 + room)
	}
	configureAxis(&p.X, c.X, xlo, xhi, dropX)
	configureAxis(&p.Y, c.Y, ylo, yhi, dropY)
	for _, l := range lines {
		if len(l.xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(l.xys)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", l.name, err)
		}
		col := plotutil.Color(l.i)
		line.Color = col
		line.Width = vg.Points(1.5)
		if l.dash {
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		points.Color = col
		points.Shape = plotutil.Shape(l.i)
		points.Radius = vg.Points(2.5)
		p.Add(line, points)
		p.Legend.Add(l.name, line, points)
	}
	for i, r := range c.Refs {
		if !finite(r.Y) || (c.Y.Scale != Linear && r.Y <= 0) {
			continue
		}
		ref, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: r.Y}, {X: p.X.Max, Y: r.Y}})
		if err != nil {
			return nil, fmt.Errorf("reference %q: %w", r.Label, err)
		}
		ref.Color = plotutil.Color(len(c.Series) + i + 2)
		ref.Width = vg.Points(1)
		ref.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(ref)
		p.Legend.Add(r.Label, ref)
	}
	placeLegend(&p.Legend, c.Legend)
	return p, nil
}

func placeLegend(l *plot.Legend, pos LegendPosition) {
	l.Top = pos == LegendTopLeft || pos == LegendTopRight
	l.Left = pos == LegendTopLeft || pos == LegendBottomLeft
	l.Padding = vg.Points(3)
	l.XOffs, l.YOffs = vg.Points(0), vg.Points(0)
	if l.Left {
		l.XOffs = vg.Points(8)
	} else {
		l.XOffs = vg.Points(-8)
	}
	if l.Top {
		l.YOffs = vg.Points(-8)
	} else {
		l.YOffs = vg.Points(8)
	}
	l.ThumbnailWidth = vg.Points(24)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
