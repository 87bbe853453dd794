package agent

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/status"

	"github.com/railyard-io/railyard/internal/deviceplugin"
	"github.com/railyard-io/railyard/internal/topology"
)

// Metrics are the agent's Prometheus metrics, on their own registry.
type Metrics struct {
	reg             *prometheus.Registry
	devices         *prometheus.GaugeVec
	empty           *prometheus.GaugeVec
	warnings        *prometheus.CounterVec
	registered      *prometheus.GaugeVec
	preferred       *prometheus.CounterVec
	preferredByDist *prometheus.CounterVec
	allocated       *prometheus.CounterVec
	rpc             *prometheus.HistogramVec
	dra             *prometheus.HistogramVec
	discovery       *prometheus.HistogramVec
	kubeletRestarts prometheus.Counter
	degraded        *prometheus.GaugeVec
	refused         *prometheus.GaugeVec
}

var _ deviceplugin.Metrics = (*Metrics)(nil)

// NewMetrics creates and registers the metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		devices: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "railyard_pool_devices", Help: "Devices advertised per pool and health.",
		}, []string{"resource", "health"}),
		empty: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "railyard_pool_empty", Help: "1 when the pool's selectors match no device on this node (the pool advertises nothing).",
		}, []string{"resource"}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "railyard_warnings_total", Help: "Warnings the agent logged, by reason (pool_empty, pools_overlap, dra_and_device_plugin_overlap, fabric_ports_unreadable).",
		}, []string{"reason"}),
		registered: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "railyard_plugin_registered", Help: "1 when the pool's device plugin is registered with kubelet.",
		}, []string{"resource"}),
		preferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "railyard_preferred_allocations_total", Help: "GetPreferredAllocation decisions per pool and effective policy (gpu-aware without known GPUs counts as spread).",
		}, []string{"resource", "policy"}),
		preferredByDist: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "railyard_preferred_devices_total", Help: "Devices chosen by GetPreferredAllocation per policy and best distance class to the pod's GPUs (UNKNOWN without GPUs).",
		}, []string{"resource", "policy", "class"}),
		allocated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "railyard_allocated_devices_total", Help: "Devices handed to containers by Allocate.",
		}, []string{"resource"}),
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "railyard_rpc_duration_seconds", Help: "Device plugin RPC latency.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}, []string{"resource", "method", "code"}),
		dra: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "railyard_dra_duration_seconds", Help: "DRA kubelet plugin call latency: NodePrepareResources (prepare) and NodeUnprepareResources (unprepare) of all a pod's claims, checkpoint and CDI specs written.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}, []string{"method", "result"}),
		discovery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "railyard_discovery_duration_seconds", Help: "Topology discovery time.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14),
		}, []string{"result"}),
		kubeletRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "railyard_kubelet_restarts_total", Help: "Times kubelet.sock was recreated.",
		}),
		degraded: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "railyard_nic_degraded", Help: "1 while the NIC's error counters mark it degraded (its link flapped, or took errorCounters.linkErrors link errors in a window): its devices are unhealthy for the device plugin and DRA.",
		}, []string{"pci", "rdma"}),
		refused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "railyard_nic_firmware_refused", Help: "1 while the agent's firmware policy refuses the NIC's firmware (older than its model's minimum, or with a refused known issue): its devices are unhealthy for the device plugin and DRA.",
		}, []string{"pci", "rdma", "firmware"}),
	}
	m.reg.MustRegister(m.devices, m.empty, m.warnings, m.registered, m.preferred, m.preferredByDist, m.allocated, m.rpc, m.dra, m.discovery, m.kubeletRestarts, m.degraded, m.refused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, reason := range []string{warningPoolEmpty, warningPoolsOverlap} {
		m.warnings.WithLabelValues(reason) // exported as 0 before the first warning
	}
	return m
}

// ObserveRPC implements deviceplugin.Metrics.
func (m *Metrics) ObserveRPC(resource, method string, d time.Duration, err error) {
	m.rpc.WithLabelValues(resource, method, status.Code(err).String()).Observe(d.Seconds())
}

// ObserveDRA is draplugin.Config.Observe: a kubelet call's latency, by
// method and result ("ok", or "error" when a claim of it failed).
func (m *Metrics) ObserveDRA(method string, d time.Duration, failed bool) {
	result := "ok"
	if failed {
		result = "error"
	}
	m.dra.WithLabelValues(method, result).Observe(d.Seconds())
}

// ObservePreferred implements deviceplugin.Metrics.
func (m *Metrics) ObservePreferred(resource, policy string, classes []topology.Class) {
	m.preferred.WithLabelValues(resource, policy).Inc()
	for _, c := range classes {
		m.preferredByDist.WithLabelValues(resource, policy, c.String()).Inc()
	}
}

// ObserveAllocate implements deviceplugin.Metrics.
func (m *Metrics) ObserveAllocate(resource string, n int) {
	m.allocated.WithLabelValues(resource).Add(float64(n))
}

// SetRegistered implements deviceplugin.Metrics.
func (m *Metrics) SetRegistered(resource string, ok bool) {
	v := 0.0
	if ok {
		v = 1
	}
	m.registered.WithLabelValues(resource).Set(v)
}

// SetNICMarks records the marks the agent put on t's NICs, 0 or 1 for
// every NIC with an RDMA device: degraded by its error counters (only
// when the counters' health is on: counters), refused by the firmware
// policy (labelled with the firmware).
func (m *Metrics) SetNICMarks(t *topology.Topology, counters bool) {
	m.degraded.Reset()
	m.refused.Reset()
	flag := func(mark string) float64 {
		if mark != "" {
			return 1
		}
		return 0
	}
	for _, n := range t.NICs {
		if n.RDMA == "" {
			continue
		}
		if counters {
			m.degraded.WithLabelValues(n.PCI, n.RDMA).Set(flag(n.Degraded))
		}
		m.refused.WithLabelValues(n.PCI, n.RDMA, n.Firmware).Set(flag(n.Refused))
	}
}

// SetPoolDevices records a pool's device counts.
func (m *Metrics) SetPoolDevices(resource string, healthy, unhealthy int) {
	m.devices.WithLabelValues(resource, "Healthy").Set(float64(healthy))
	m.devices.WithLabelValues(resource, "Unhealthy").Set(float64(unhealthy))
}

// SetPoolEmpty records whether a pool's selectors matched no device.
func (m *Metrics) SetPoolEmpty(resource string, empty bool) {
	v := 0.0
	if empty {
		v = 1
	}
	m.empty.WithLabelValues(resource).Set(v)
}

// Warning counts one logged warning.
func (m *Metrics) Warning(reason string) {
	m.warnings.WithLabelValues(reason).Inc()
}

// ObserveDiscovery records one discovery.
func (m *Metrics) ObserveDiscovery(d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.discovery.WithLabelValues(result).Observe(d.Seconds())
}

// handler serves /metrics and /healthz.
func (a *Agent) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := a.health(); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
