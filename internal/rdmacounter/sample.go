package rdmacounter

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/railyard-io/railyard/internal/sysfs"
)

// Sample is one reading of a port's counters: raw values, as the kernel
// prints them, indexed like Counters.
type Sample struct {
	Time   time.Time
	values [numCounters]uint64
	has    [numCounters]bool
}

// Raw returns counter i's raw value (in the kernel's unit, unscaled) and
// whether the port has it.
func (s *Sample) Raw(i int) (uint64, bool) {
	if i < 0 || i >= numCounters {
		return 0, false
	}
	return s.values[i], s.has[i]
}

// Index returns the index of the counter named name ("port_transmit_bytes"),
// or -1.
func Index(name string) int {
	for i, c := range counters {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// CounterError is a counter file Read found in the listing and could not
// read or parse; Index is its row in Counters. Read's error joins one per
// such file (errors.As finds the first; a caller wanting every one walks
// the join's Unwrap() []error).
type CounterError struct {
	Index int
	Err   error
}

func (e *CounterError) Error() string { return e.Err.Error() }
func (e *CounterError) Unwrap() error { return e.Err }

// Read reads port port of RDMA device rdma ("mlx5_3", 1): every counter of
// the table the device has, and the link counters only when link is set
// (a PF; a VF shares its PF's link). It lists each counter directory once
// and reads only the table's files in it. A file that cannot be read or
// parsed is left out of the sample and its error (a *CounterError)
// returned, joined with the others'; the sample holds everything that
// could be read.
func Read(fs sysfs.FS, rdma string, port int, link bool, now time.Time) (Sample, error) {
	s := Sample{Time: now}
	var errs []error
	present := map[sysfs.CounterDir][]string{}
	for _, dir := range []sysfs.CounterDir{sysfs.PMACounters, sysfs.HWCounters} {
		names, err := fs.PortCounterNames(rdma, port, dir)
		if err != nil {
			return s, fmt.Errorf("%s port %d: %w", sysfs.Printable(rdma), port, err)
		}
		present[dir] = names
	}
	for i, c := range counters {
		if c.Link && !link {
			continue
		}
		if _, ok := slices.BinarySearch(present[c.Dir], c.File); !ok {
			continue
		}
		v, err := fs.PortCounter(rdma, port, c.Dir, c.File)
		if err != nil {
			if !errors.Is(err, sysfs.ErrNotFound) { // gone since the listing: a device going away
				errs = append(errs, &CounterError{Index: i, Err: fmt.Errorf("%s port %d: %w", sysfs.Printable(rdma), port, err)})
			}
			continue
		}
		s.values[i], s.has[i] = v, true
	}
	return s, errors.Join(errs...)
}
