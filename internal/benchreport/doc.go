// Package benchreport turns labelled benchmark results and their verdicts
// into a report directory: report.html (verdicts, table of peaks, charts),
// report.json, and PNG and SVG charts of bandwidth, latency and nccl-tests
// bus bandwidth against message size, one series per scenario.
package benchreport
