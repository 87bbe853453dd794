package sysfs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// CounterDir is one of an RDMA port's two counter directories.
type CounterDir string

const (
	// PMACounters is ports/N/counters: the InfiniBand performance
	// management agent's PortCounters (and PortCountersExtended), which
	// drivers/infiniband/core/sysfs.c reads with a MAD per file. Present
	// on devices with a process_mad (mlx5, also on RoCE ports), absent on
	// Soft-RoCE.
	PMACounters CounterDir = "counters"
	// HWCounters is ports/N/hw_counters: the driver's own statistics
	// (rdma_hw_stats: mlx5's Q and congestion counters, rxe's packet
	// counters), cached by the kernel for the lifespan file's milliseconds.
	HWCounters CounterDir = "hw_counters"
)

// lifespan is the one file of hw_counters that is no counter: how long
// (ms) the kernel caches the driver's values.
const lifespan = "lifespan"

// counterDir returns the port's counter directory below the root, after
// checking every element names one entry (no separator, no dot names).
func counterDir(rdma string, port int, dir CounterDir) (string, error) {
	if dir != PMACounters && dir != HWCounters {
		return "", fmt.Errorf("unknown counter directory %s", Quote(string(dir)))
	}
	if !isEntryName(rdma) {
		return "", fmt.Errorf("invalid RDMA device name %s", Quote(rdma))
	}
	if port < 1 {
		return "", fmt.Errorf("RDMA port %d: ports count from 1", port)
	}
	return filepath.Join("class/infiniband", rdma, "ports", strconv.Itoa(port), string(dir)), nil
}

func isEntryName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}

// PortCounterNames lists the counter files of an RDMA port's directory
// dir, sorted; hw_counters' lifespan is left out. A port without the
// directory has none.
func (f FS) PortCounterNames(rdma string, port int, dir CounterDir) ([]string, error) {
	rel, err := counterDir(rdma, port, dir)
	if err != nil {
		return nil, err
	}
	names, err := f.List(rel)
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if n != lifespan {
			out = append(out, n)
		}
	}
	return out, nil
}

// PortCounter reads one counter of an RDMA port ("mlx5_0", 1,
// PMACounters, "port_xmit_data") as the kernel prints it: the raw value,
// in the counter's own unit (port_xmit_data counts 4-byte words). A
// missing file is ErrNotFound.
func (f FS) PortCounter(rdma string, port int, dir CounterDir, name string) (uint64, error) {
	rel, err := counterDir(rdma, port, dir)
	if err != nil {
		return 0, err
	}
	if !isEntryName(name) || name == lifespan {
		return 0, fmt.Errorf("invalid counter name %s", Quote(name))
	}
	s, err := f.ReadString(filepath.Join(rel, name))
	if err != nil {
		return 0, err
	}
	v, err := ParseCounter(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(rel, name), err)
	}
	return v, nil
}

// ErrBadCounter is returned (wrapped) for a counter file whose content is
// not an unsigned decimal number.
var ErrBadCounter = errors.New("not an unsigned decimal counter")

// ParseCounter parses a counter file's content: an unsigned decimal of at
// most 64 bits ("%u\n" or "%llu\n" in the kernel's show functions),
// surrounding white space ignored.
func ParseCounter(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" || t[0] == '+' || t[0] == '-' {
		return 0, fmt.Errorf("counter %s: %w", Quote(s), ErrBadCounter)
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter %s: %w (%w)", Quote(s), ErrBadCounter, numError(err))
	}
	return v, nil
}
