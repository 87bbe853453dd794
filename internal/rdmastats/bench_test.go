package rdmastats

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// One scrape of a node with 2,048 VFs (the dual-rail node: 16 PFs with
// 128 VFs each, every device with mlx5's counter files), every VF held by
// a container of its own: the time and size of what Prometheus gets.
// BENCHMARKS.md has the numbers and the command.
func BenchmarkScrape2048VFs(b *testing.B) {
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		b.Fatal(err)
	}
	root, topo := node(b, d, 128, fakesysfs.MLX5)
	owners := map[string]rdmacounter.Owner{}
	vfs := 0
	for _, dev := range rdmacounter.Devices(topo, nil) {
		if dev.Kind == rdmacounter.KindVF {
			vfs++
			owners[dev.PCI] = rdmacounter.Owner{Namespace: "team-a", Pod: fmt.Sprintf("train-worker-%d", vfs), Container: "trainer", Job: "train"}
		}
	}
	if vfs != 2048 {
		b.Fatalf("%d VFs, want 2048", vfs)
	}
	devs := rdmacounter.Devices(topo, owners)
	c := New(sysfs.New(root), "gpu-node-17", func() []rdmacounter.Device { return devs })
	text := scrape(b, c)            // the first scrape starts the totals
	reg := prometheus.NewRegistry() // as the agent's
	reg.MustRegister(c)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	gz := 0
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip") // as Prometheus asks
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("scrape: %d", rec.Code)
		}
		gz = rec.Body.Len()
	}
	b.StopTimer()
	// The machine may be shared: CPU time says what a scrape costs, the
	// wall time how long it took here.
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(gz), "gzip-bytes/scrape")
	samples := 0
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			samples++
		}
	}
	b.ReportMetric(float64(len(text)), "bytes/scrape")
	b.ReportMetric(float64(samples), "series/scrape")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
