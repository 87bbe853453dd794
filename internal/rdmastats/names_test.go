package rdmastats

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// CounterIndex reads back every counter's metric name, and nothing else.
func TestCounterIndexInvertsMetricName(t *testing.T) {
	t.Parallel()
	for i, k := range rdmacounter.Counters() {
		if got := CounterIndex(MetricName(k)); got != i {
			t.Errorf("CounterIndex(%s) = %d, want %d", MetricName(k), got, i)
		}
	}
	for _, name := range []string{ReadErrors, "railyard_rdma_port_transmit_bytes", "port_transmit_bytes_total", "other_port_transmit_bytes_total", Prefix + "nope_total", ""} {
		if got := CounterIndex(name); got != -1 {
			t.Errorf("CounterIndex(%q) = %d, want -1", name, got)
		}
	}
}

// The descriptors carry Labels (and the gauge LabelNode): what a reader
// spells through the constants is what a scrape holds.
func TestDescriptorsCarryTheLabels(t *testing.T) {
	t.Parallel()
	c := New(sysfs.New(t.TempDir()), "n", func() []rdmacounter.Device { return nil })
	ch := make(chan *prometheus.Desc, 100)
	c.Describe(ch)
	close(ch)
	want := `variableLabels: {` + strings.Join(Labels(), ",") + `}`
	n := 0
	for d := range ch {
		s := d.String()
		switch {
		case strings.Contains(s, `"`+ReadErrors+`"`):
			if !strings.Contains(s, `variableLabels: {`+LabelNode+`}`) {
				t.Errorf("%s: want labels {%s}", s, LabelNode)
			}
		case !strings.Contains(s, want):
			t.Errorf("%s: want %s", s, want)
		}
		n++
	}
	if n != len(rdmacounter.Counters())+1 {
		t.Errorf("%d descriptors, want one per counter and the gauge", n)
	}
}
