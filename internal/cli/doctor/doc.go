// Package doctor implements `railyard doctor`: it runs internal/doctor's
// checks on this node (or a sysfs tree and a host root) and prints a table
// or JSON, exiting 0 when ready, 1 with warnings, 2 with failures.
package doctor
