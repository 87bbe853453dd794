// Package rdmastats exports the node's RDMA port counters to Prometheus,
// attributed to whoever holds each device: a prometheus.Collector that
// reads every port's counters through internal/rdmacounter at each scrape
// and labels them with the node, the RDMA device (nic), its port, rail,
// PCI address and kind (pf or vf), and, for a device a container holds,
// its namespace, pod, container and job (job_name).
//
// The caller says which devices exist and who holds them
// (rdmacounter.Devices builds the list from the topology and a map from
// PCI address to Owner; rdmacounter.JobName picks a pod's job). The collector keeps, per port, monotonic totals
// across counter wraps and device resets (rdmacounter.Totals), so
// Prometheus's rate() is right for 32-bit counters too.
//
// Cardinality is bounded by the node, never by traffic: at most one
// series per device, port and counter of rdmacounter's table (link
// counters on PFs only), plus one gauge. docs/counters.md lists the
// metrics.
package rdmastats
