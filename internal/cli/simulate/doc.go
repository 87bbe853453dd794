// Package simulate implements `railyard simulate`: it runs the cluster
// simulator (internal/sim) on a machine model or a sysfs tree, compares the
// NIC allocation policies side by side, and prints a table, JSON, or an
// HTML report with charts (internal/simreport).
package simulate
