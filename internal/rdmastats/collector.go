package rdmastats

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// Prefix begins every metric name.
const Prefix = "railyard_rdma_"

// The labels of every counter series (Labels is their order) and of the
// read-errors gauge (LabelNode): readers of the metrics (railyard top
// --cluster) spell them through these.
const (
	LabelNode      = "node"
	LabelNIC       = "nic"
	LabelPort      = "port"
	LabelRail      = "rail"
	LabelPCI       = "pci"
	LabelKind      = "kind"
	LabelNamespace = "namespace"
	LabelPod       = "pod"
	LabelContainer = "container"
	LabelJob       = "job_name"
)

// ReadErrors is the gauge of ports whose counters could not all be read
// at a scrape, labelled LabelNode.
const ReadErrors = Prefix + "counter_read_errors"

// Labels returns every counter series' label names, in order.
func Labels() []string {
	return []string{LabelNode, LabelNIC, LabelPort, LabelRail, LabelPCI, LabelKind, LabelNamespace, LabelPod, LabelContainer, LabelJob}
}

// Collector is the prometheus.Collector of the node's RDMA counters.
// Collect reads every port of the devices the devices function returns
// (called once per scrape); scrapes are serialized.
type Collector struct {
	fs      sysfs.FS
	node    string
	devices func() []rdmacounter.Device

	counters []rdmacounter.Counter
	descs    []*prometheus.Desc
	errDesc  *prometheus.Desc

	mu     sync.Mutex
	totals map[portKey]*rdmacounter.Totals
}

// portKey names one port of one device; the PCI address is in it so that
// a name reused by another function starts new totals.
type portKey struct {
	rdma, pci string
	port      int
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns the collector of node's RDMA counters read from fs.
func New(fs sysfs.FS, node string, devices func() []rdmacounter.Device) *Collector {
	c := &Collector{fs: fs, node: node, devices: devices, counters: rdmacounter.Counters(), totals: map[portKey]*rdmacounter.Totals{}}
	for _, k := range c.counters {
		c.descs = append(c.descs, prometheus.NewDesc(MetricName(k), k.Help, Labels(), nil))
	}
	c.errDesc = prometheus.NewDesc(ReadErrors,
		"Ports whose counters could not all be read, or whose labels were not valid, at this scrape.", []string{LabelNode}, nil)
	return c
}

// MetricName is the metric of a counter: railyard_rdma_<name>_total.
func MetricName(k rdmacounter.Counter) string { return Prefix + k.Name + "_total" }

// CounterIndex is MetricName's inverse: the index in rdmacounter.Counters
// of the counter whose metric is name, or -1.
func CounterIndex(name string) int {
	stem, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return -1
	}
	stem, ok = strings.CutSuffix(stem, "_total")
	if !ok {
		return -1
	}
	return rdmacounter.Index(stem)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.errDesc
}

// readers is how many ports are read at once. A PMA counter read is a
// MAD the driver answers with a firmware command on mlx5: reads wait on
// the device, not on a CPU, so a few run side by side.
const readers = 8

// portRead is one port to read at a scrape and what was read.
type portRead struct {
	dev  *rdmacounter.Device
	port int
	s    rdmacounter.Sample
	err  error
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	devs := c.devices()
	seen := map[portKey]bool{}
	var reads []portRead
	for i := range devs {
		for _, p := range devs[i].Ports {
			k := portKey{devs[i].RDMA, devs[i].PCI, p}
			if seen[k] {
				continue // listed twice: one series set
			}
			seen[k] = true
			reads = append(reads, portRead{dev: &devs[i], port: p})
		}
	}
	c.read(reads)
	failed := 0
	for i := range reads {
		r := &reads[i]
		if r.err != nil {
			failed++
		}
		k := portKey{r.dev.RDMA, r.dev.PCI, r.port}
		tot := c.totals[k]
		if tot == nil {
			tot = &rdmacounter.Totals{}
			c.totals[k] = tot
		}
		tot.Add(&r.s)
		if !c.emit(ch, r.dev, r.port, &r.s, tot) {
			failed++
		}
	}
	for k := range c.totals {
		if !seen[k] {
			delete(c.totals, k) // the device is gone
		}
	}
	ch <- prometheus.MustNewConstMetric(c.errDesc, prometheus.GaugeValue, float64(failed), c.node)
}

// read reads every port, readers at a time.
func (c *Collector) read(reads []portRead) {
	now := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(readers, len(reads)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reads) {
					return
				}
				r := &reads[i]
				r.s, r.err = rdmacounter.Read(c.fs, r.dev.RDMA, r.port, r.dev.Kind == rdmacounter.KindPF, now)
			}
		})
	}
	wg.Wait()
}

// emit sends the port's counters that the sample has; false when its
// labels are not valid (a device name that is not UTF-8).
func (c *Collector) emit(ch chan<- prometheus.Metric, d *rdmacounter.Device, port int, s *rdmacounter.Sample, tot *rdmacounter.Totals) bool {
	rail := ""
	if d.Rail >= 0 {
		rail = strconv.Itoa(d.Rail)
	}
	values := []string{c.node, d.RDMA, strconv.Itoa(port), rail, d.PCI, d.Kind, d.Owner.Namespace, d.Owner.Pod, d.Owner.Container, d.Owner.Job}
	for i := range c.counters {
		if _, ok := s.Raw(i); !ok {
			continue
		}
		v, _ := tot.Total(i)
		m, err := prometheus.NewConstMetric(c.descs[i], prometheus.CounterValue, float64(v), values...)
		if err != nil {
			return false
		}
		ch <- m
	}
	return true
}
