// Package chart draws small, readable charts over gonum.org/v1/plot: line
// charts with linear, log2 or log10 axes (message sizes, latencies), bar
// charts and histograms, written as PNG or SVG.
//
// Charts are plain values (LineChart, BarChart, Histogram) that build a
// gonum plot; Write and Save render any of them. Axis labels carry their
// units, every chart with more than one series has a legend, and values a
// log axis cannot show (zero, negative) are dropped and counted in the axis
// label rather than panicking.
package chart
