package benchreport

import (
	"fmt"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/chart"
)

func seriesName(l bench.Labelled) string {
	return fmt.Sprintf("%s (%s)", l.Scenario, l.Result.Tool)
}

var sizeAxis = chart.Axis{Label: "Message size", Unit: "bytes", Scale: chart.Log2, TickLabel: chart.BytesLabel}

// BandwidthChart plots perftest average bandwidth and OSU bandwidth (Gb/s)
// against message size, one series per result, with the line rate as a
// reference. ok is false when no result has bandwidth rows.
func BandwidthChart(results []bench.Labelled, lineRateGbps float64) (c chart.LineChart, ok bool) {
	c = chart.LineChart{
		Title:  "Bandwidth vs message size",
		X:      sizeAxis,
		Y:      chart.Axis{Label: "Bandwidth", Unit: "Gb/s"},
		Legend: chart.LegendTopLeft,
	}
	for _, l := range results {
		var s chart.Series
		s.Name = seriesName(l)
		for _, row := range l.Result.PerftestBW {
			s.X, s.Y = append(s.X, float64(row.Bytes)), append(s.Y, row.BWAvgGbps)
		}
		for _, row := range l.Result.OSU {
			if row.BWGbps != nil {
				s.X, s.Y = append(s.X, float64(row.Bytes)), append(s.Y, *row.BWGbps)
			}
		}
		if len(s.X) > 0 {
			if l.Result.Info.Bidirectional {
				s.Name += ", bidirectional"
			}
			c.Series = append(c.Series, s)
		}
	}
	if lineRateGbps > 0 {
		c.Refs = append(c.Refs, chart.RefLine{Label: fmt.Sprintf("line rate %g Gb/s", lineRateGbps), Y: lineRateGbps})
	}
	return c, len(c.Series) > 0
}

// LatencyChart plots perftest typical latency (average when the run has no
// typical column) and OSU average latency against message size, on a log
// latency axis.
func LatencyChart(results []bench.Labelled) (c chart.LineChart, ok bool) {
	c = chart.LineChart{
		Title:  "Latency vs message size",
		X:      sizeAxis,
		Y:      chart.Axis{Label: "Latency", Unit: "µs", Scale: chart.Log10},
		Legend: chart.LegendTopLeft,
	}
	for _, l := range results {
		var s chart.Series
		s.Name = seriesName(l)
		for _, row := range l.Result.PerftestLat {
			v := row.LatTypicalUs
			if v == nil {
				v = row.LatAvgUs
			}
			if v != nil {
				s.X, s.Y = append(s.X, float64(row.Bytes)), append(s.Y, *v)
			}
		}
		for _, row := range l.Result.OSU {
			if row.LatAvgUs != nil {
				s.X, s.Y = append(s.X, float64(row.Bytes)), append(s.Y, *row.LatAvgUs)
			}
		}
		if len(s.X) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	return c, len(c.Series) > 0
}

// BusBWChart plots nccl-tests out-of-place bus bandwidth (GB/s) against
// message size, with NICs x line rate as a reference.
func BusBWChart(results []bench.Labelled, lineRateGbps float64, nics int) (c chart.LineChart, ok bool) {
	c = chart.LineChart{
		Title:  "nccl-tests bus bandwidth vs message size",
		X:      sizeAxis,
		Y:      chart.Axis{Label: "Bus bandwidth, out-of-place", Unit: "GB/s"},
		Legend: chart.LegendTopLeft,
	}
	for _, l := range results {
		var s chart.Series
		s.Name = seriesName(l)
		for _, row := range l.Result.NCCL {
			s.X, s.Y = append(s.X, float64(row.Bytes)), append(s.Y, row.OOPBusBWGBps)
		}
		if len(s.X) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	if lineRateGbps > 0 && nics > 0 {
		c.Refs = append(c.Refs, chart.RefLine{
			Label: fmt.Sprintf("%d NICs x %g Gb/s = %g GB/s", nics, lineRateGbps, float64(nics)*lineRateGbps/8),
			Y:     float64(nics) * lineRateGbps / 8,
		})
	}
	return c, len(c.Series) > 0
}

// NCCLLatencyChart plots nccl-tests out-of-place time per operation
// against message size on log axes: the small-message end shows latency
// (RDMA's advantage over TCP is largest there), the large end bandwidth.
func NCCLLatencyChart(results []bench.Labelled) (c chart.LineChart, ok bool) {
	c = chart.LineChart{
		Title:  "nccl-tests out-of-place time vs message size",
		X:      sizeAxis,
		Y:      chart.Axis{Label: "Time", Scale: chart.Log10, TickLabel: chart.MicrosecondsLabel},
		Legend: chart.LegendBottomRight, // time rises with size: the bottom right is empty
	}
	for _, l := range results {
		var s chart.Series
		s.Name = seriesName(l)
		for _, row := range l.Result.NCCL {
			s.X, s.Y = append(s.X, float64(row.Bytes)), append(s.Y, row.OOPTimeUs)
		}
		if len(s.X) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	return c, len(c.Series) > 0
}
