package rdmastats

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/machine"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// node generates d with vfs VFs per PF, gives every RDMA device the
// counters of drv, and discovers it.
func node(tb testing.TB, d *machine.Description, vfs int, drv fakesysfs.CounterDriver) (string, *topology.Topology) {
	tb.Helper()
	root, err := fakesysfs.MkdirTemp()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = fakesysfs.Cleanup(root) })
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{VFsPerPF: vfs}); err != nil {
		tb.Fatal(err)
	}
	t, err := discovery.Discover(context.Background(), root)
	if err != nil {
		tb.Fatal(err)
	}
	for _, dev := range rdmacounter.Devices(t, nil) {
		if err := fakesysfs.WriteCounters(root, dev.RDMA, drv); err != nil {
			tb.Fatal(err)
		}
	}
	return root, t
}

func smallNode(t *testing.T, vfs int, drv fakesysfs.CounterDriver) (string, *topology.Topology) {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	return node(t, d, vfs, drv)
}

func advance(t *testing.T, root, rdma string, drv fakesysfs.CounterDriver, by map[string]uint64) {
	t.Helper()
	if err := fakesysfs.AdvanceCounters(root, rdma, 1, drv, by); err != nil {
		t.Fatal(err)
	}
}

// scrape registers c on a pedantic registry (which checks every metric
// against its description) and returns what a Prometheus scrape gets.
func scrape(tb testing.TB, c prometheus.Collector) string {
	tb.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// lines returns the scraped lines (samples and their HELP and TYPE) of
// the named metrics, in the scrape's order.
func lines(text string, metrics ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, m := range metrics {
			if strings.HasPrefix(l, m+"{") || strings.HasPrefix(l, m+" ") || strings.HasPrefix(l, "# HELP "+m+" ") || strings.HasPrefix(l, "# TYPE "+m+" ") {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// count returns how many samples of metric (all metrics when "") a scrape
// of c has.
func count(tb testing.TB, c prometheus.Collector, metric string) int {
	tb.Helper()
	n := 0
	for _, l := range strings.Split(scrape(tb, c), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") && (metric == "" || strings.HasPrefix(l, metric+"{")) {
			n++
		}
	}
	return n
}

var trainer = rdmacounter.Owner{Namespace: "ml", Pod: "llama-worker-3", Container: "trainer", Job: "llama"}

// The small node with one VF per PF, the first PF's VF held by a pod:
// every port's counters, moved by the fake's writer, are exported with
// who holds the device, the data counters in bytes (words x 4), the link
// counters on PFs only.
func TestCollectorExportsCountersWithOwners(t *testing.T) {
	t.Parallel()
	root, topo := smallNode(t, 1, fakesysfs.MLX5)
	c := New(sysfs.New(root), "node-a", func() []rdmacounter.Device {
		return rdmacounter.Devices(topo, map[string]rdmacounter.Owner{"0000:18:00.1": trainer})
	})
	advance(t, root, "mlx5_3", fakesysfs.MLX5, map[string]uint64{"counters/port_xmit_data": 1000, "hw_counters/np_cnp_sent": 5})
	advance(t, root, "mlx5_0", fakesysfs.MLX5, map[string]uint64{"counters/symbol_error": 3, "counters/port_xmit_data": 25})

	const want = `# HELP railyard_rdma_cnp_sent_total Congestion notification packets sent by the notification point (mlx5).
# TYPE railyard_rdma_cnp_sent_total counter
railyard_rdma_cnp_sent_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_0",node="node-a",pci="0000:18:00.0",pod="",port="1",rail="0"} 0
railyard_rdma_cnp_sent_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_1",node="node-a",pci="0000:2a:00.0",pod="",port="1",rail="1"} 0
railyard_rdma_cnp_sent_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_2",node="node-a",pci="0000:3b:00.0",pod="",port="1",rail=""} 0
railyard_rdma_cnp_sent_total{container="",job_name="",kind="vf",namespace="",nic="mlx5_4",node="node-a",pci="0000:2a:00.1",pod="",port="1",rail="1"} 0
railyard_rdma_cnp_sent_total{container="",job_name="",kind="vf",namespace="",nic="mlx5_5",node="node-a",pci="0000:3b:00.1",pod="",port="1",rail=""} 0
railyard_rdma_cnp_sent_total{container="trainer",job_name="llama",kind="vf",namespace="ml",nic="mlx5_3",node="node-a",pci="0000:18:00.1",pod="llama-worker-3",port="1",rail="0"} 5
# HELP railyard_rdma_counter_read_errors Ports whose counters could not all be read, or whose labels were not valid, at this scrape.
# TYPE railyard_rdma_counter_read_errors gauge
railyard_rdma_counter_read_errors{node="node-a"} 0
# HELP railyard_rdma_port_symbol_errors_total Minor link errors (symbol errors) on the physical link.
# TYPE railyard_rdma_port_symbol_errors_total counter
railyard_rdma_port_symbol_errors_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_0",node="node-a",pci="0000:18:00.0",pod="",port="1",rail="0"} 3
railyard_rdma_port_symbol_errors_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_1",node="node-a",pci="0000:2a:00.0",pod="",port="1",rail="1"} 0
railyard_rdma_port_symbol_errors_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_2",node="node-a",pci="0000:3b:00.0",pod="",port="1",rail=""} 0
# HELP railyard_rdma_port_transmit_bytes_total Data transmitted by the port, in bytes (the PMA counts 4-byte words: port_xmit_data x 4).
# TYPE railyard_rdma_port_transmit_bytes_total counter
railyard_rdma_port_transmit_bytes_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_0",node="node-a",pci="0000:18:00.0",pod="",port="1",rail="0"} 100
railyard_rdma_port_transmit_bytes_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_1",node="node-a",pci="0000:2a:00.0",pod="",port="1",rail="1"} 0
railyard_rdma_port_transmit_bytes_total{container="",job_name="",kind="pf",namespace="",nic="mlx5_2",node="node-a",pci="0000:3b:00.0",pod="",port="1",rail=""} 0
railyard_rdma_port_transmit_bytes_total{container="",job_name="",kind="vf",namespace="",nic="mlx5_4",node="node-a",pci="0000:2a:00.1",pod="",port="1",rail="1"} 0
railyard_rdma_port_transmit_bytes_total{container="",job_name="",kind="vf",namespace="",nic="mlx5_5",node="node-a",pci="0000:3b:00.1",pod="",port="1",rail=""} 0
railyard_rdma_port_transmit_bytes_total{container="trainer",job_name="llama",kind="vf",namespace="ml",nic="mlx5_3",node="node-a",pci="0000:18:00.1",pod="llama-worker-3",port="1",rail="0"} 4000
`
	got := lines(scrape(t, c), "railyard_rdma_port_transmit_bytes_total", "railyard_rdma_port_symbol_errors_total", "railyard_rdma_cnp_sent_total", "railyard_rdma_counter_read_errors")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scrape (-want +got):\n%s", diff)
	}
}

// value returns one series' value.
func value(t *testing.T, c *Collector, metric, nic string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "nic" && l.GetValue() == nic {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s for %s", metric, nic)
	return 0
}

// A legacy PMA's 32-bit data counter wraps, then the device is reset:
// the exported counter keeps counting what was sent and never goes down.
func TestCollectorCountsThroughWrapAndReset(t *testing.T) {
	t.Parallel()
	root, topo := smallNode(t, 0, fakesysfs.PMALegacy)
	c := New(sysfs.New(root), "n", func() []rdmacounter.Device { return rdmacounter.Devices(topo, nil) })
	const metric = "railyard_rdma_port_transmit_bytes_total"
	if err := fakesysfs.SetCounter(root, "mlx5_0", 1, "counters/port_xmit_data", 1<<32-100); err != nil {
		t.Fatal(err)
	}
	first := value(t, c, metric, "mlx5_0")
	advance(t, root, "mlx5_0", fakesysfs.PMALegacy, map[string]uint64{"counters/port_xmit_data": 300}) // wraps to 200
	afterWrap := value(t, c, metric, "mlx5_0")
	if err := fakesysfs.ResetCounters(root, "mlx5_0", 1); err != nil {
		t.Fatal(err)
	}
	advance(t, root, "mlx5_0", fakesysfs.PMALegacy, map[string]uint64{"counters/port_xmit_data": 50})
	afterReset := value(t, c, metric, "mlx5_0")
	got := []float64{afterWrap - first, afterReset - afterWrap}
	if diff := cmp.Diff([]float64{4 * 300, 4 * 50}, got); diff != "" {
		t.Errorf("bytes counted across the wrap, then the reset (-want +got):\n%s", diff)
	}
}

// A device that goes (a VF destroyed, a pod's device released) loses its
// series and its totals; one whose labels cannot be exported is counted
// as an error, never a panic.
func TestCollectorForgetsGoneDevicesAndBadLabels(t *testing.T) {
	t.Parallel()
	root, topo := smallNode(t, 1, fakesysfs.MLX5)
	all := rdmacounter.Devices(topo, nil)
	devs := all
	c := New(sysfs.New(root), "n", func() []rdmacounter.Device { return devs })
	if n := count(t, c, "railyard_rdma_port_transmit_bytes_total"); n != 6 {
		t.Fatalf("%d series for 6 devices", n)
	}
	devs = all[:2]
	if n := count(t, c, "railyard_rdma_port_transmit_bytes_total"); n != 2 {
		t.Errorf("%d series after 4 devices went, want 2", n)
	}
	if len(c.totals) != 2 {
		t.Errorf("%d ports' totals kept, want 2", len(c.totals))
	}
	bad := all[0]
	bad.Owner = rdmacounter.Owner{Namespace: "ns\xff", Pod: "p"}
	devs = []rdmacounter.Device{bad, all[1], all[1]} // invalid UTF-8, and a device listed twice
	if n := count(t, c, "railyard_rdma_port_transmit_bytes_total"); n != 1 {
		t.Errorf("%d series, want 1 (the bad one left out, the twice-listed one once)", n)
	}
	if got := lines(scrape(t, c), "railyard_rdma_counter_read_errors"); !strings.Contains(got, `railyard_rdma_counter_read_errors{node="n"} 1`) {
		t.Errorf("error gauge:\n%s", got)
	}
}

// Series are bounded by the node: each device's ports times the counters
// it has (link counters on PFs only), whoever holds the devices.
func TestCollectorCardinalityIsBoundedByTheNode(t *testing.T) {
	t.Parallel()
	d, err := fakesysfs.DualRailNode()
	if err != nil {
		t.Fatal(err)
	}
	root, topo := node(t, d, 4, fakesysfs.MLX5)
	owners := map[string]rdmacounter.Owner{}
	for _, dev := range rdmacounter.Devices(topo, nil) {
		if dev.Kind == rdmacounter.KindVF {
			owners[dev.PCI] = rdmacounter.Owner{Namespace: "ns", Pod: "pod-" + dev.PCI, Container: "c", Job: "j"}
		}
	}
	free := count(t, New(sysfs.New(root), "n", func() []rdmacounter.Device { return rdmacounter.Devices(topo, nil) }), "")
	held := count(t, New(sysfs.New(root), "n", func() []rdmacounter.Device { return rdmacounter.Devices(topo, owners) }), "")
	// 16 PFs x (13 PMA + 15 mlx5 hw counters) + 64 VFs x (6 PMA + 15),
	// and the error gauge.
	want := 16*28 + 64*21 + 1
	if free != want || held != want {
		t.Errorf("series: %d free, %d held by 64 pods; want %d both", free, held, want)
	}
}
