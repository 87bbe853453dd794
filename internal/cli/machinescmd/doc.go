// Package machinescmd implements `railyard machines`, which lists the
// built-in machine models and can write one's fake sysfs tree to disk.
package machinescmd
