package top

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// portKey names one port of one device.
type portKey struct {
	rdma, pci string
	port      int
}

// read samples every port of devs into out, stamped now. A port that
// cannot be read shows what could be (the rest unknown); one gone shows
// nothing. It returns what could not be read, a line per counter file
// (or port), for the frame to say.
func read(fs sysfs.FS, devs []rdmacounter.Device, out map[portKey]rdmacounter.Sample, now time.Time) []string {
	var unreadable []string
	for _, d := range devs {
		for _, p := range d.Ports {
			s, err := rdmacounter.Read(fs, d.RDMA, p, d.Kind == rdmacounter.KindPF, now)
			out[portKey{d.RDMA, d.PCI, p}] = s
			if err == nil {
				continue
			}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					unreadable = append(unreadable, e.Error())
				}
			} else {
				unreadable = append(unreadable, err.Error())
			}
		}
	}
	return unreadable
}

// maxUnreadable bounds the lines a frame spends on unreadable counters.
const maxUnreadable = 5

// unreadableNotes says once each what two readings could not read,
// escaped, at most maxUnreadable lines and a count of the rest.
func unreadableNotes(readings ...[]string) []string {
	seen := map[string]bool{}
	var all []string
	for _, r := range readings {
		for _, l := range r {
			if !seen[l] {
				seen[l] = true
				all = append(all, l)
			}
		}
	}
	slices.Sort(all)
	var out []string
	for i, l := range all {
		if i == maxUnreadable {
			out = append(out, fmt.Sprintf("unreadable: %d more", len(all)-i))
			break
		}
		out = append(out, "unreadable (shown as -): "+termsafe.Escape(l))
	}
	return out
}

// row is one line of a frame: a port, or a pod's ports added up.
type row struct {
	dev, port, kind, pci, rail, pod string
	sum                             rdmacounter.Summary
}

// sorters order rows, largest first.
var sorters = map[string]func(a, b row) int{
	"traffic": func(a, b row) int {
		return cmp.Or(cmp.Compare(b.sum.TxBytes+b.sum.RxBytes, a.sum.TxBytes+a.sum.RxBytes),
			cmp.Compare(b.sum.TxPackets+b.sum.RxPackets, a.sum.TxPackets+a.sum.RxPackets))
	},
	"errors":     func(a, b row) int { return cmp.Compare(b.sum.Errors, a.sum.Errors) },
	"congestion": func(a, b row) int { return cmp.Compare(b.sum.Congestion, a.sum.Congestion) },
}

// frame computes the rows between two readings: one per port both have,
// or one per pod (devices no pod holds stay per port) with --by-pod;
// sorted by o.sortBy, then by device and port.
func frame(devs []rdmacounter.Device, prev, cur map[portKey]rdmacounter.Sample, o options) []row {
	var rows []row
	byPod := map[string]int{}
	for _, d := range devs {
		pod := ""
		if d.Owner.Pod != "" {
			pod = d.Owner.Namespace + "/" + d.Owner.Pod + "/" + d.Owner.Container
		}
		for _, p := range d.Ports {
			k := portKey{d.RDMA, d.PCI, p}
			a, okA := prev[k]
			b, okB := cur[k]
			if !okA || !okB {
				continue
			}
			sum := rdmacounter.Summarize(rdmacounter.Rates(&a, &b))
			if o.byPod && pod != "" {
				if i, ok := byPod[pod]; ok {
					rows[i].sum = rows[i].sum.Add(sum)
					rows[i].dev += "," + sysfs.Printable(d.RDMA)
					continue
				}
				byPod[pod] = len(rows)
				rows = append(rows, row{dev: sysfs.Printable(d.RDMA), port: "-", kind: "pod", pci: "-", rail: "-", pod: pod, sum: sum})
				continue
			}
			rail := "-"
			if d.Rail >= 0 {
				rail = strconv.Itoa(d.Rail)
			}
			rows = append(rows, row{dev: sysfs.Printable(d.RDMA), port: strconv.Itoa(p), kind: d.Kind, pci: d.PCI, rail: rail, pod: cmp.Or(pod, "-"), sum: sum})
		}
	}
	less := sorters[o.sortBy]
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(less(a, b), strings.Compare(a.dev, b.dev), strings.Compare(a.port, b.port))
	})
	return rows
}

// render writes one frame: a header line, what could not be read, then
// the rows as a table.
func render(w io.Writer, rows []row, note string, unreadable []string, o options) error {
	head := fmt.Sprintf("railyard top: %d rows, every %s, sorted by %s", len(rows), o.interval, o.sortBy)
	if note != "" {
		head += "; " + note
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DEVICE\tPORT\tKIND\tPCI\tRAIL\tTX/s\tRX/s\tTX PKT/s\tRX PKT/s\tERR/s\tCONG/s\t  POD")
	for _, r := range rows {
		c := cells(r.sum)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t  %s\n", r.dev, r.port, r.kind, r.pci, r.rail, c.tx, c.rx,
			c.txp, c.rxp, c.errs, c.cong, termsafe.Escape(r.pod))
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	for _, n := range unreadable {
		if _, err := fmt.Fprintln(w, "  "+n); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// rowCells are a summary's rates as printed: "-" for one with no value
// (no counter for it, or none read), the error rate marked when a counter
// was reset.
type rowCells struct{ tx, rx, txp, rxp, errs, cong string }

// unknown is how a rate with no value is printed.
const unknown = "-"

// cells prints a summary's rates.
func cells(sum rdmacounter.Summary) rowCells {
	rate := func(has bool, v float64, f func(float64) string) string {
		if !has || math.IsNaN(v) || math.IsInf(v, 0) {
			return unknown
		}
		return f(v)
	}
	c := rowCells{
		tx: rate(sum.Has.TxBytes, sum.TxBytes, bytesRate), rx: rate(sum.Has.RxBytes, sum.RxBytes, bytesRate),
		txp: rate(sum.Has.TxPackets, sum.TxPackets, num), rxp: rate(sum.Has.RxPackets, sum.RxPackets, num),
		errs: rate(sum.Has.Errors, sum.Errors, num), cong: rate(sum.Has.Congestion, sum.Congestion, num),
	}
	if sum.Reset {
		c.errs += " reset"
	}
	return c
}

// bytesRate prints bytes per second with a binary unit ("1.5GiB").
func bytesRate(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + units[0]
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[i]
}

// num prints a rate with one decimal, none when whole.
func num(v float64) string {
	if v >= 1e15 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
