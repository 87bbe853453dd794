package chart

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Scale is how an axis maps values.
type Scale int

// Scales. Log scales drop non-positive values (they cannot be drawn) and
// report how many were dropped in the axis label.
const (
	Linear Scale = iota
	Log2
	Log10
)

// Format is an output image format.
type Format string

// Formats.
const (
	PNG Format = "png"
	SVG Format = "svg"
)

// Axis describes one axis.
type Axis struct {
	Label string // "Message size"
	Unit  string // "bytes": shown as "Message size (bytes)"
	Scale Scale
	// TickLabel formats tick values; nil prints the number (%g). Use
	// BytesLabel for message sizes.
	TickLabel func(float64) string
	// Min and Max fix the range when Max > Min; otherwise it follows the data.
	Min, Max float64
}

// Title returns the label with its unit: "Bandwidth (Gb/s)".
func (a Axis) Title() string {
	if a.Unit == "" {
		return a.Label
	}
	return fmt.Sprintf("%s (%s)", a.Label, a.Unit)
}

// Size is the image size in centimetres (zero: 20 x 12 cm) and the PNG
// resolution (zero: 144 dpi, sharp on high-density screens).
type Size struct {
	WidthCm, HeightCm float64
	DPI               int
}

func (s Size) lengths() (vg.Length, vg.Length) {
	w, h := s.WidthCm, s.HeightCm
	if w <= 0 {
		w = 20
	}
	if h <= 0 {
		h = 12
	}
	return vg.Length(w) * vg.Centimeter, vg.Length(h) * vg.Centimeter
}

// Chart is anything that builds a gonum plot.
type Chart interface {
	Plot() (*plot.Plot, error)
}

// Write renders c to w in format f.
func Write(w io.Writer, c Chart, f Format, size Size) error {
	p, err := c.Plot()
	if err != nil {
		return err
	}
	width, height := size.lengths()
	var wt io.WriterTo
	switch f {
	case PNG:
		dpi := size.DPI
		if dpi <= 0 {
			dpi = 144
		}
		c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
		p.Draw(draw.New(c))
		wt = vgimg.PngCanvas{Canvas: c}
	case SVG:
		c := vgsvg.New(width, height)
		p.Draw(draw.New(c))
		wt = c
	default:
		return fmt.Errorf("render: unsupported format %q", f)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("write %s: %w", f, err)
	}
	return nil
}

// Save renders c to path; the extension (.png or .svg) picks the format.
func Save(path string, c Chart, size Size) error {
	f := Format(strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), "."))
	if f != PNG && f != SVG {
		return fmt.Errorf("save %s: unsupported format %q (want .png or .svg)", path, f)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save chart: %w", err)
	}
	if err := Write(out, c, f, size); err != nil {
		out.Close()
		return fmt.Errorf("save %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// newPlot returns a plot with readable default text sizes.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = font.Length(14)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = font.Length(12)
		a.Tick.Label.Font.Size = font.Length(10)
	}
	p.Legend.TextStyle.Font.Size = font.Length(10)
	return p
}

// configureAxis sets scale, ticks, label and range of a gonum axis for the
// finite positive-aware data range [lo, hi].
func configureAxis(pa *plot.Axis, a Axis, lo, hi float64, dropped int) {
	pa.Label.Text = a.Title()
	if dropped > 0 {
		pa.Label.Text += fmt.Sprintf(" [%d values <= 0 not shown on log scale]", dropped)
	}
	if a.Max > a.Min {
		lo, hi = a.Min, a.Max
	}
	switch a.Scale {
	case Log2, Log10:
		base := 10.0
		if a.Scale == Log2 {
			base = 2
		}
		if !(lo > 0) || math.IsInf(hi, 0) || !(hi >= lo) {
			lo, hi = 1, base
		}
		// Start at a power of the base so the first tick is labelled; end
		// at the data (plus any headroom the caller added).
		lo = math.Pow(base, math.Floor(logb(lo, base)+1e-9))
		hi = max(hi, lo*base)
		pa.Scale = plot.LogScale{}
		pa.Tick.Marker = logTicker{base: base, label: a.TickLabel}
	default:
		if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
			lo, hi = 0, 1
		}
		if hi <= lo {
			lo, hi = lo-1, hi+1
		}
		pa.Tick.Marker = linearTicker{label: a.TickLabel}
	}
	pa.Min, pa.Max = lo, hi
}

func logb(v, base float64) float64 { return math.Log(v) / math.Log(base) }

// logTicker puts a tick on every power of base; at most about twelve carry
// labels, the others are minor ticks.
type logTicker struct {
	base  float64
	label func(float64) string
}

func (t logTicker) Ticks(min, max float64) []plot.Tick {
	if !(min > 0) || !(max > min) || math.IsInf(max, 0) {
		return nil
	}
	first := int(math.Ceil(logb(min, t.base) - 1e-9))
	last := int(math.Floor(logb(max, t.base) + 1e-9))
	if last-first > 400 {
		return nil
	}
	// Label every step-th power, aligned to multiples of step so that a
	// log2 axis of sizes shows 1K, 1M... (step 2, 5 or 10).
	steps := []int{1, 2, 5, 10, 20, 50, 100}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if (last-first)/s+1 <= 12 {
			step = s
			break
		}
	}
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		v := math.Pow(t.base, float64(e))
		tick := plot.Tick{Value: v}
		if ((e%step)+step)%step == 0 {
			tick.Label = t.format(v)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

func (t logTicker) format(v float64) string {
	if t.label != nil {
		return t.label(v)
	}
	return fmt.Sprintf("%g", v)
}

// linearTicker labels 4 to 8 round values (steps of 1, 2, 2.5 or 5 x 10^k)
// with minor ticks halfway, formatted without float noise.
type linearTicker struct{ label func(float64) string }

func (t linearTicker) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return nil
	}
	raw := span / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)))+1)
	var ticks []plot.Tick
	start := math.Ceil(lo/step) * step
	for i := 0; i < 100; i++ {
		v := start + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		if half := v - step/2; half >= lo {
			ticks = append(ticks, plot.Tick{Value: half})
		}
		label := strconv.FormatFloat(v, 'f', decimals, 64)
		if strings.Contains(label, ".") {
			label = strings.TrimRight(strings.TrimRight(label, "0"), ".")
		}
		if label == "-0" {
			label = "0"
		}
		if t.label != nil {
			label = t.label(v)
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// BytesLabel prints a size with binary units: 8, 1K, 64K, 1M, 8G.
func BytesLabel(v float64) string {
	units := []string{"", "K", "M", "G", "T", "P"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%g%s", math.Round(v*100)/100, units[i])
}

// IntegerLabel prints whole numbers ("4") and leaves other ticks
// unlabelled: for counts such as GPUs or nodes.
func IntegerLabel(v float64) string {
	if r := math.Round(v); math.Abs(v-r) < 1e-9 && math.Abs(r) < 1e15 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return ""
}

// MicrosecondsLabel prints a time given in microseconds with a readable
// unit: 10µs, 1ms, 100ms, 2s.
func MicrosecondsLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%gs", math.Round(v/1e6*100)/100)
	case a >= 1e3:
		return fmt.Sprintf("%gms", math.Round(v/1e3*100)/100)
	}
	return fmt.Sprintf("%gµs", math.Round(v*100)/100)
}
