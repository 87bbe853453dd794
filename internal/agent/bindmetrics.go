package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/railyard-io/railyard/internal/binding"
)

// bindingMetrics are late binding's metrics, on the agent's registry.
type bindingMetrics struct {
	duration *prometheus.HistogramVec
	releases *prometheus.CounterVec
}

// newBindingMetrics registers late binding's metrics; railyard_bindings
// is read from bindings at each scrape.
func newBindingMetrics(reg *prometheus.Registry, bindings func() ([]binding.Binding, error)) *bindingMetrics {
	m := &bindingMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "railyard_bind_duration_seconds", Help: "Time to bind a pod's tokens (PodResources list, policy, store, CDI specs), by where: early (after Allocate, while kubelet creates the sandbox), prestart (PreStartContainer bound them), prestart-bound (PreStartContainer found them bound early).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}, []string{"at", "result"}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "railyard_bindings_released_total", Help: "Bindings the agent released, by reason (pod-gone, reassigned); railyard-cni's DEL releases are not counted here.",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.duration, m.releases, bindingsCollector{bindings: bindings, desc: prometheus.NewDesc("railyard_bindings",
		"Tokens bound to a device, per pool, binder (cni, agent) and distance class to the pod's GPUs (NONE without GPUs).",
		[]string{"resource", "by", "class"}, nil)})
	for _, r := range []string{binding.ReasonPodGone, binding.ReasonReassigned} {
		m.releases.WithLabelValues(r)
	}
	return m
}

func (m *bindingMetrics) observeBind(at string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.duration.WithLabelValues(at, result).Observe(d.Seconds())
}

func (m *bindingMetrics) released(reason string, n int) {
	if n > 0 {
		m.releases.WithLabelValues(reason).Add(float64(n))
	}
}

// bindingsCollector reports railyard_bindings from the store at each
// scrape: a gauge set after each bind, off kubelet's path, lagged behind
// the bindings (railyard-cni's binds never moved it until the next GC).
type bindingsCollector struct {
	bindings func() ([]binding.Binding, error)
	desc     *prometheus.Desc
}

func (c bindingsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c bindingsCollector) Collect(ch chan<- prometheus.Metric) {
	bs, err := c.bindings()
	if err != nil {
		return // the GC logs an unreadable bindings file; /metrics stays up
	}
	counts := map[[3]string]int{}
	for _, b := range bs {
		class := b.Class
		if class == "" {
			class = "NONE"
		}
		counts[[3]string{b.Resource, b.By, class}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k[0], k[1], k[2])
	}
}
