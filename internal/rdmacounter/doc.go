// Package rdmacounter reads an RDMA port's counters through internal/sysfs
// and makes them right: which files Railyard reads (Counters: one table of
// file, unit, scale, wrap width and name), their units (the PMA's data
// counters count 4-byte words; Sample values are raw, Delta and Totals are
// in the table's unit), and their wraparound and resets (a counter narrower
// than 64 bits wraps at its width, and a value that goes down without
// wrapping is a device reset or driver reload, counted from zero, never a
// negative rate).
//
// Devices lists the node's RDMA devices to read (PFs and VFs with their
// rails) and who holds each (Owner, JobName), from the topology and the
// caller's map; nothing here asks Kubernetes.
//
// Totals turns successive samples into monotonic counters, which the
// exporter (internal/rdmastats) publishes; Rates gives per-second rates
// between two samples, for a live view. Nothing here writes or logs; it reads
// only the sysfs tree.
package rdmacounter
