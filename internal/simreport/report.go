package simreport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/railyard-io/railyard/internal/chart"
	"github.com/railyard-io/railyard/internal/sim"
	"github.com/railyard-io/railyard/internal/topology"
)

// Options shape the report.
type Options struct {
	// Format of the chart files (default PNG).
	Format chart.Format
	// Title heads the page (default "Railyard simulation: <machine>").
	Title string
}

// Chart file names, without extension.
const (
	ClassesChart   = "classes"
	GDRChart       = "gdr"
	BandwidthChart = "bandwidth"
)

// Write creates dir (if needed) and writes the chart files, result.json (the
// same JSON as `railyard simulate --json`) and index.html. It returns the
// paths written, index.html last.
func Write(dir string, res *sim.Result, opts Options) ([]string, error) {
	if res == nil || len(res.Policies) == 0 {
		return nil, errors.New("simreport: no results to report")
	}
	if opts.Format == "" {
		opts.Format = chart.PNG
	}
	if opts.Format != chart.PNG && opts.Format != chart.SVG {
		return nil, fmt.Errorf("simreport: chart format %q: want png or svg", opts.Format)
	}
	if opts.Title == "" {
		opts.Title = "Railyard simulation: " + res.Machine
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simreport: %w", err)
	}
	var written []string
	charts := []struct {
		name string
		c    chart.Chart
	}{
		{ClassesChart, classesChart(res)},
		{GDRChart, gdrChart(res)},
		{BandwidthChart, bandwidthChart(res)},
	}
	for _, c := range charts {
		path := filepath.Join(dir, c.name+"."+string(opts.Format))
		if err := chart.Save(path, c.c, chart.Size{WidthCm: 22, HeightCm: 12}); err != nil {
			return written, fmt.Errorf("simreport: %w", err)
		}
		written = append(written, path)
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return written, fmt.Errorf("simreport: %w", err)
	}
	resultPath := filepath.Join(dir, "result.json")
	if err := os.WriteFile(resultPath, append(data, '\n'), 0o644); err != nil {
		return written, fmt.Errorf("simreport: %w", err)
	}
	written = append(written, resultPath)
	var buf bytes.Buffer
	if err := page.Execute(&buf, view(res, opts)); err != nil {
		return written, fmt.Errorf("simreport: %w", err)
	}
	index := filepath.Join(dir, "index.html")
	if err := os.WriteFile(index, buf.Bytes(), 0o644); err != nil {
		return written, fmt.Errorf("simreport: %w", err)
	}
	return append(written, index), nil
}

func policyNames(res *sim.Result) []string {
	var out []string
	for _, p := range res.Policies {
		out = append(out, p.Name)
	}
	return out
}

// classesChart: per class, the share of each policy's GPUs whose nearest
// allocated NIC has that class.
func classesChart(res *sim.Result) chart.BarChart {
	c := chart.BarChart{
		Title:  "Nearest allocated NIC per GPU, by PCIe distance class",
		X:      chart.Axis{Label: "Distance class of the GPU's nearest allocated NIC (PIX, PXB: GPUDirect RDMA)"},
		Y:      chart.Axis{Label: "Share of placed GPUs", Unit: "%"},
		Legend: chart.LegendTopRight,
	}
	for _, cl := range topology.Classes {
		c.Categories = append(c.Categories, cl.String())
	}
	for _, p := range res.Policies {
		g := chart.BarGroup{Name: p.Name}
		for _, cl := range topology.Classes {
			g.Values = append(g.Values, pct(p.ClassCount(cl), p.GPUs))
		}
		c.Groups = append(c.Groups, g)
	}
	return c
}

// gdrChart: the GPUDirect fraction of every policy.
func gdrChart(res *sim.Result) chart.BarChart {
	g := chart.BarGroup{Name: "GPUs with a GPUDirect NIC"}
	for _, p := range res.Policies {
		g.Values = append(g.Values, 100*p.GDRFraction)
	}
	return chart.BarChart{
		Title:      "GPUs whose nearest allocated NIC is within PXB",
		X:          chart.Axis{Label: "NIC allocation policy"},
		Y:          chart.Axis{Label: "GPUDirect RDMA fraction", Unit: "% of placed GPUs", Min: 0, Max: 105},
		Categories: policyNames(res),
		Groups:     []chart.BarGroup{g},
		Legend:     chart.LegendTopLeft,
	}
}

// bandwidthChart: the distribution of the pods' mean modelled per-GPU
// bandwidth in 1 GB/s bins, one bar per policy in each bin.
func bandwidthChart(res *sim.Result) chart.BarChart {
	c := chart.BarChart{
		Title:  "Pods by modelled per-GPU RDMA bandwidth",
		X:      chart.Axis{Label: "Pod's mean modelled per-GPU bandwidth", Unit: "GB/s, 1 GB/s bins"},
		Y:      chart.Axis{Label: "Share of placed pods", Unit: "%"},
		Legend: chart.LegendTopLeft,
	}
	used := map[int]bool{}
	for _, p := range res.Policies {
		for _, b := range p.PodBandwidth {
			used[int(math.Floor(b.GBps))] = true
		}
	}
	var bins []int
	for b := range used {
		bins = append(bins, b)
	}
	slices.Sort(bins)
	for _, b := range bins {
		c.Categories = append(c.Categories, fmt.Sprintf("%d–%d", b, b+1))
	}
	for _, p := range res.Policies {
		total := 0
		counts := map[int]int{}
		for _, b := range p.PodBandwidth {
			total += b.Pods
			counts[int(math.Floor(b.GBps))] += b.Pods
		}
		g := chart.BarGroup{Name: p.Name}
		for _, b := range bins {
			g.Values = append(g.Values, pct(counts[b], total))
		}
		c.Groups = append(c.Groups, g)
	}
	return c
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

type pageView struct {
	Title string
	Table sim.Table
	// Jobs is the table of jobs of several pods, nil without them.
	Jobs     *sim.Table
	Charts   []string
	Format   string
	Settings []sim.Setting
}

func view(res *sim.Result, opts Options) pageView {
	v := pageView{Title: opts.Title, Table: res.Table(), Settings: res.Settings(), Format: string(opts.Format),
		Charts: []string{ClassesChart, GDRChart, BandwidthChart}}
	if jobs, ok := res.JobTable(); ok {
		v.Jobs = &jobs
	}
	return v
}
