package fakesysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CounterDriver names the set of counter files a driver gives each port
// of its RDMA devices, with the width at which each value wraps, as the
// kernel's code writes them:
//
//   - the PMA counters (ports/N/counters) are drivers/infiniband/core/
//     sysfs.c's PORT_PMA_ATTR (16-bit symbol_error, 8-bit link_downed,
//     4-bit local_link_integrity_errors, ...) and, with extended width
//     (IB_PMA_CLASS_CAP_EXT_WIDTH), PORT_PMA_ATTR_EXT (64-bit data and
//     packets);
//   - mlx5's hw_counters are drivers/infiniband/hw/mlx5/counters.c's Q
//     counters (32-bit: be32_to_cpu of query_q_counter_out) and its
//     congestion and ext_ppcnt counters (64-bit);
//   - rxe's are drivers/infiniband/sw/rxe/rxe_hw_counters.c's (atomic64).
type CounterDriver string

const (
	// MLX5 is mlx5_ib: PMA counters with extended width and its
	// hw_counters.
	MLX5 CounterDriver = "mlx5"
	// PMALegacy is a device whose PMA lacks extended width: the kernel's
	// 32-bit data and packet counters, no hw_counters.
	PMALegacy CounterDriver = "pma-legacy"
	// RXE is Soft-RoCE: no PMA counters (rxe has no process_mad), its
	// hw_counters.
	RXE CounterDriver = "rxe"
)

// Counter directories, as internal/sysfs names them.
const (
	pmaDir = "counters"
	hwDir  = "hw_counters"
)

type counterFile struct {
	dir, name string
	width     uint
}

// pmaErrors are the PortCounters every PMA device has, whatever its width.
var pmaErrors = []counterFile{
	{pmaDir, "symbol_error", 16}, {pmaDir, "link_error_recovery", 8}, {pmaDir, "link_downed", 8},
	{pmaDir, "port_rcv_errors", 16}, {pmaDir, "port_rcv_remote_physical_errors", 16},
	{pmaDir, "port_rcv_switch_relay_errors", 16}, {pmaDir, "port_xmit_discards", 16},
	{pmaDir, "port_xmit_constraint_errors", 8}, {pmaDir, "port_rcv_constraint_errors", 8},
	{pmaDir, "local_link_integrity_errors", 4}, {pmaDir, "excessive_buffer_overrun_errors", 4},
	{pmaDir, "VL15_dropped", 16}, {pmaDir, "port_xmit_wait", 32},
}

func pmaTraffic(width uint) []counterFile {
	out := []counterFile{{pmaDir, "port_xmit_data", width}, {pmaDir, "port_rcv_data", width}, {pmaDir, "port_xmit_packets", width}, {pmaDir, "port_rcv_packets", width}}
	if width == 64 {
		for _, n := range []string{"unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets"} {
			out = append(out, counterFile{pmaDir, n, 64})
		}
	}
	return out
}

func hwFiles(width uint, names ...string) []counterFile {
	out := make([]counterFile, len(names))
	for i, n := range names {
		out[i] = counterFile{hwDir, n, width}
	}
	return out
}

// counterFiles returns the files of driver d.
func counterFiles(d CounterDriver) ([]counterFile, error) {
	switch d {
	case MLX5:
		out := append(append([]counterFile{}, pmaErrors...), pmaTraffic(64)...)
		out = append(out, hwFiles(32, "rx_write_requests", "rx_read_requests", "rx_atomic_requests", "rx_dct_connect",
			"out_of_buffer", "out_of_sequence", "duplicate_request", "rnr_nak_retry_err", "packet_seq_err",
			"implied_nak_seq_err", "local_ack_timeout_err", "resp_local_length_error", "resp_cqe_error",
			"req_cqe_error", "req_remote_invalid_request", "req_remote_access_errors", "resp_remote_access_errors",
			"resp_cqe_flush_error", "req_cqe_flush_error", "req_transport_retries_exceeded", "req_rnr_retries_exceeded",
			"roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans")...)
		return append(out, hwFiles(64, "rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_icrc_encapsulated")...), nil
	case PMALegacy:
		return append(append([]counterFile{}, pmaErrors...), pmaTraffic(32)...), nil
	case RXE:
		return hwFiles(64, "sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
			"send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err", "retry_rnr_exceeded_err",
			"completer_retry_err", "send_err", "link_downed", "rdma_sends", "rdma_recvs"), nil
	}
	return nil, fmt.Errorf("fakesysfs: unknown counter driver %q", d)
}

// portsDir is an RDMA device's ports directory (through class/infiniband).
func portsDir(root, rdma string) (string, error) {
	if rdma == "" || strings.ContainsAny(rdma, "/\x00") || rdma == "." || rdma == ".." {
		return "", fmt.Errorf("fakesysfs: invalid RDMA device name %q", rdma)
	}
	p := filepath.Join(root, "class/infiniband", rdma, "ports")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("fakesysfs: RDMA device %s: %w", rdma, err)
	}
	return p, nil
}

// WriteCounters gives every port of RDMA device rdma the counter files of
// driver d, all zero (and hw_counters' lifespan, 10 ms as the kernel's
// default), as a driver's probe does.
func WriteCounters(root, rdma string, d CounterDriver) error {
	files, err := counterFiles(d)
	if err != nil {
		return err
	}
	pd, err := portsDir(root, rdma)
	if err != nil {
		return err
	}
	ports, err := os.ReadDir(pd)
	if err != nil {
		return err
	}
	for _, p := range ports {
		hw := false
		for _, f := range files {
			dir := filepath.Join(pd, p.Name(), f.dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := writeAtomic(filepath.Join(dir, f.name), "0"); err != nil {
				return err
			}
			hw = hw || f.dir == hwDir
		}
		if hw {
			if err := writeAtomic(filepath.Join(pd, p.Name(), hwDir, "lifespan"), "10"); err != nil {
				return err
			}
		}
	}
	return nil
}

// AdvanceCounters adds to counters of one port, as traffic does. Keys are
// "<dir>/<file>" ("counters/port_xmit_data", "hw_counters/np_cnp_sent")
// of driver d's files; each value wraps at its width, as the kernel's
// does (a 16-bit symbol_error goes from 65535 to 0). Note that the data
// counters count 4-byte words: advancing port_xmit_data by 1 is 4 bytes.
func AdvanceCounters(root, rdma string, port int, d CounterDriver, by map[string]uint64) error {
	files, err := counterFiles(d)
	if err != nil {
		return err
	}
	width := make(map[string]uint, len(files))
	for _, f := range files {
		width[f.dir+"/"+f.name] = f.width
	}
	pd, err := portsDir(root, rdma)
	if err != nil {
		return err
	}
	for key, n := range by {
		w, ok := width[key]
		if !ok {
			return fmt.Errorf("fakesysfs: %s has no counter %q", d, key)
		}
		p := filepath.Join(pd, strconv.Itoa(port), key)
		cur, err := strconv.ParseUint(readTrim(p), 10, 64)
		if err != nil {
			return fmt.Errorf("fakesysfs: %s port %d %s: %w", rdma, port, key, err)
		}
		next := cur + n
		if w < 64 {
			next &= 1<<w - 1
		}
		if err := writeAtomic(p, strconv.FormatUint(next, 10)); err != nil {
			return err
		}
	}
	return nil
}

// SetCounter sets one counter ("counters/symbol_error") of a port to v:
// near its wrap, or anywhere a test needs it.
func SetCounter(root, rdma string, port int, key string, v uint64) error {
	pd, err := portsDir(root, rdma)
	if err != nil {
		return err
	}
	dir, name, ok := strings.Cut(key, "/")
	if !ok || (dir != pmaDir && dir != hwDir) || name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("fakesysfs: counter key %q: want counters/<file> or hw_counters/<file>", key)
	}
	p := filepath.Join(pd, strconv.Itoa(port), dir, name)
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("fakesysfs: %s port %d: %w", rdma, port, err)
	}
	return writeAtomic(p, strconv.FormatUint(v, 10))
}

// ResetCounters sets every counter of a port to 0, as a device reset or a
// driver reload does (hw_counters' lifespan is kept).
func ResetCounters(root, rdma string, port int) error {
	pd, err := portsDir(root, rdma)
	if err != nil {
		return err
	}
	for _, dir := range []string{pmaDir, hwDir} {
		entries, err := os.ReadDir(filepath.Join(pd, strconv.Itoa(port), dir))
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		for _, e := range entries {
			if e.Name() == "lifespan" || !e.Type().IsRegular() {
				continue
			}
			if err := writeAtomic(filepath.Join(pd, strconv.Itoa(port), dir, e.Name()), "0"); err != nil {
				return err
			}
		}
	}
	return nil
}
