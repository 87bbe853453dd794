package top

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// portKey names one port of one device.
type portKey struct {
	rdma, pci string
	port      int
}

// read samples every port of devs into out, stamped now.
func read(fs sysfs.FS, devs []rdmacounter.Device, out map[portKey]rdmacounter.Sample, now time.Time) {
	for _, d := range devs {
		for _, p := range d.Ports {
			// A port that cannot be read shows what could be; one gone
			// shows nothing.
			s, _ := rdmacounter.Read(fs, d.RDMA, p, d.Kind == rdmacounter.KindPF, now)
			out[portKey{d.RDMA, d.PCI, p}] = s
		}
	}
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

// render writes one frame: a header line, then the rows as a table.
func render(w io.Writer, rows []row, note string, o options) error {
	head := fmt.Sprintf("railyard top: %d rows, every %s, sorted by %s", len(rows), o.interval, o.sortBy)
	if note != "" {
		head += "; " + note
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DEVICE\tPORT\tKIND\tPCI\tRAIL\tTX/s\tRX/s\tTX PKT/s\tRX PKT/s\tERR/s\tCONG/s\t  POD")
	for _, r := range rows {
		tx, rx, errs := cells(r.sum)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t  %s\n", r.dev, r.port, r.kind, r.pci, r.rail, tx, rx,
			num(r.sum.TxPackets), num(r.sum.RxPackets), errs, num(r.sum.Congestion), r.pod)
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	return tw.Flush()
}

// cells are a summary's bytes each way ("-" without the PMA's data
// counters) and its error rate (marked when a counter was reset).
func cells(sum rdmacounter.Summary) (tx, rx, errs string) {
	tx, rx = "-", "-"
	if sum.HasBytes {
		tx, rx = bytesRate(sum.TxBytes), bytesRate(sum.RxBytes)
	}
	errs = num(sum.Errors)
	if sum.Reset {
		errs += " reset"
	}
	return tx, rx, errs
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
