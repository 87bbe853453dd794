package chart

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotutil"
)

func sizes(n int) []float64 {
	var xs []float64
	for i := 0; i < n; i++ {
		xs = append(xs, math.Pow(2, float64(i+1)))
	}
	return xs
}

func bandwidthChart() LineChart {
	x := sizes(23)
	rdma, tcp := make([]float64, len(x)), make([]float64, len(x))
	for i, v := range x {
		rdma[i] = 92.4 * v / (v + 2048)
		tcp[i] = 25 * v / (v + 65536)
	}
	return LineChart{
		Title:  "ib_write_bw: bandwidth vs message size",
		X:      Axis{Label: "Message size", Unit: "bytes", Scale: Log2, TickLabel: BytesLabel},
		Y:      Axis{Label: "Bandwidth", Unit: "Gb/s"},
		Series: []Series{{Name: "rdma", X: x, Y: rdma}, {Name: "tcp", X: x, Y: tcp}},
		Refs:   []RefLine{{Label: "line rate 100 Gb/s", Y: 100}},
	}
}

func TestLineChartSVGHasLabelsLegendAndLogTicks(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, bandwidthChart(), SVG, Size{}); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"Message size (bytes)", "Bandwidth (Gb/s)", "ib_write_bw: bandwidth vs message size",
		">rdma<", ">tcp<", ">line rate 100 Gb/s<", ">1K<", ">1M<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestLineChartPNGSizeAndSeriesColour(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, bandwidthChart(), PNG, Size{WidthCm: 10, HeightCm: 5, DPI: 254}); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 500 {
		t.Errorf("size = %v, want 1000x500 (10x5 cm at 254 dpi)", b)
	}
	want := color.RGBAModel.Convert(plotutil.Color(0)).(color.RGBA)
	found := false
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && !found; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == want {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("first series colour not drawn")
	}
}

func TestEdgeCasesDoNotPanic(t *testing.T) {
	charts := map[string]Chart{
		"empty":          LineChart{Title: "empty", X: Axis{Scale: Log2}, Y: Axis{Scale: Log10}},
		"zeros on log":   LineChart{X: Axis{Scale: Log2}, Y: Axis{Scale: Log10}, Series: []Series{{Name: "z", X: []float64{0, 1}, Y: []float64{0, 0}}}},
		"single point":   LineChart{X: Axis{Scale: Log2}, Series: []Series{{Name: "one", X: []float64{8}, Y: []float64{3}}}},
		"nan and inf":    LineChart{Series: []Series{{Name: "n", X: []float64{math.NaN(), 1, math.Inf(1)}, Y: []float64{1, math.NaN(), 2}}}},
		"flat":           LineChart{Series: []Series{{Name: "f", X: []float64{1, 2}, Y: []float64{5, 5}}}},
		"huge log range": LineChart{X: Axis{Scale: Log10}, Series: []Series{{Name: "h", X: []float64{1e-300, 1e300}, Y: []float64{1, 2}}}},
		"hist empty":     Histogram{},
		"hist one value": Histogram{Values: []float64{3, 3, 3}},
		"hist nan":       Histogram{Values: []float64{math.NaN(), 1, 2, 2, 3}, Normalize: true},
		"bars empty":     BarChart{},
		"bars":           BarChart{Categories: []string{"a", "b"}, Groups: []BarGroup{{Name: "g", Values: []float64{1, math.NaN()}}}},
	}
	for name, c := range charts {
		for _, f := range []Format{PNG, SVG} {
			var buf bytes.Buffer
			if err := Write(&buf, c, f, Size{WidthCm: 8, HeightCm: 6, DPI: 72}); err != nil {
				t.Errorf("%s/%s: %v", name, f, err)
			}
			if buf.Len() == 0 {
				t.Errorf("%s/%s: empty output", name, f)
			}
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, LineChart{Series: []Series{{X: []float64{1}, Y: nil}}}, SVG, Size{}); err == nil {
		t.Error("mismatched series lengths accepted")
	}
	if err := Write(&buf, BarChart{Categories: []string{"a"}, Groups: []BarGroup{{Values: []float64{1, 2}}}}, SVG, Size{}); err == nil {
		t.Error("bar group with wrong value count accepted")
	}
}

func TestZerosOnLogAxisAreCounted(t *testing.T) {
	var buf bytes.Buffer
	c := LineChart{X: Axis{Label: "Size", Scale: Log2}, Y: Axis{Label: "Bus bandwidth", Unit: "GB/s", Scale: Log10},
		Series: []Series{{Name: "s", X: []float64{8, 16, 32}, Y: []float64{0, 0.5, 2}}}}
	if err := Write(&buf, c, SVG, Size{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Bus bandwidth (GB/s) [1 values &lt;= 0 not shown on log scale]") {
		t.Error("dropped value not reported in the axis label")
	}
}

func TestSaveByExtension(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.png", "a.svg"} {
		if err := Save(filepath.Join(dir, name), bandwidthChart(), Size{}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	if err := Save(filepath.Join(dir, "a.gif"), bandwidthChart(), Size{}); err == nil {
		t.Error("gif accepted")
	}
}

func TestHistogramAndBarsSVG(t *testing.T) {
	var buf bytes.Buffer
	h := Histogram{Title: "Allocation time", X: Axis{Label: "Decision time", Unit: "µs"}, Values: []float64{1, 2, 2, 3, 3, 3, 4}, Bins: 4}
	if err := Write(&buf, h, SVG, Size{}); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "Decision time (µs)") || !strings.Contains(s, ">Count<") {
		t.Error("histogram labels missing")
	}
	buf.Reset()
	b := BarChart{Title: "Peaks", Y: Axis{Label: "Bandwidth", Unit: "Gb/s"}, Categories: []string{"rdma", "tcp"},
		Groups: []BarGroup{{Name: "pod", Values: []float64{92, 20}}, {Name: "bare-metal", Values: []float64{92.5, 21}}}}
	if err := Write(&buf, b, SVG, Size{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">rdma<", ">tcp<", ">pod<", ">bare-metal<", "Bandwidth (Gb/s)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("bar SVG lacks %q", want)
		}
	}
}

func TestBytesLabel(t *testing.T) {
	for v, want := range map[float64]string{2: "2", 1024: "1K", 65536: "64K", 8388608: "8M", 8589934592: "8G", 1536: "1.5K"} {
		if got := BytesLabel(v); got != want {
			t.Errorf("BytesLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestCountAndTimeLabels(t *testing.T) {
	for v, want := range map[float64]string{1: "1", 16: "16", 2.5: "", 0: "0", -3: "-3"} {
		if got := IntegerLabel(v); got != want {
			t.Errorf("IntegerLabel(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{10: "10µs", 1000: "1ms", 250000: "250ms", 2e6: "2s", 0.5: "0.5µs"} {
		if got := MicrosecondsLabel(v); got != want {
			t.Errorf("MicrosecondsLabel(%v) = %q, want %q", v, got, want)
		}
	}
}
