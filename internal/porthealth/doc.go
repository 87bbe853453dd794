// Package porthealth marks a NIC degraded from its ports' error counters:
// the health the port state alone does not show (a link that flaps
// between two polls, a cable taking link errors while it stays up).
//
// A Tracker reads every PF port's error counters (through internal/sysfs
// and rdmacounter, which gets their widths, wraps and resets right) each
// time the agent rediscovers, compares them with a reading at most
// Config.Window old, and judges the rises by rdmacounter's table, the one
// place counters are named: its link faults are the counters that degrade
// (Rules lists them). A flap (the link went down, or retrained after
// errors: the table's Flap) degrades at once; link errors (symbol errors,
// local link integrity, excessive buffer overrun) degrade when
// Config.LinkErrors or more rose in one window. Retransmissions,
// transport retries exceeded and receive drops do not: their cause is as
// often a peer or congestion as this port (railyard doctor reports them).
// A degraded NIC stays degraded until Config.Hold has passed without a
// counted rise. Wraps and resets are never rises.
//
// The agent writes each degraded NIC's reason into topology.NIC.Degraded,
// which the one health rule (topology.NIC.Health) reads: the device plugin
// then advertises the NIC and its VFs Unhealthy, and the DRA driver taints
// or unpublishes them and reports them to kubelet. Nothing here logs,
// writes, or asks Kubernetes.
package porthealth
