package topo

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// maxWarning bounds a printed warning (discovery bounds its own; warnings
// from elsewhere pass through the same clip).
const maxWarning = 1024

func numa(n int) string {
	if n < 0 {
		return "N/A"
	}
	return strconv.Itoa(n)
}

// render prints the human view: matrix, NICs, rails, warnings.
func render(w io.Writer, t *topology.Topology, from string) {
	fmt.Fprintf(w, "Topology of %s: %d GPUs, %d RDMA NICs, %d host bridges\n\n", from, len(t.GPUs), len(t.NICs), len(t.HostBridges))
	if len(t.GPUs) > 0 && len(t.NICs) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		fmt.Fprint(tw, "\t")
		for _, n := range t.NICs {
			fmt.Fprintf(tw, "%s\t", sysfs.Printable(n.RDMA))
		}
		fmt.Fprintln(tw, "NUMA\tPCI")
		for i, g := range t.GPUs {
			fmt.Fprintf(tw, "GPU%d\t", i)
			for _, n := range t.NICs {
				fmt.Fprintf(tw, "%s\t", t.Class(g.PCI, n.PCI))
			}
			fmt.Fprintf(tw, "%s\t%s\n", numa(g.NUMA), g.PCI)
		}
		tw.Flush()
		fmt.Fprintln(w, "\nLegend: PIX = at most one PCIe switch, PXB = several bridges (no host bridge),")
		fmt.Fprintln(w, "PHB = through a host bridge, NODE = between host bridges of a NUMA node,")
		fmt.Fprintln(w, "SYS = across NUMA nodes. NCCL uses GPUDirect RDMA by default up to PXB.")
		fromFile := 0
		for _, l := range t.Links {
			if l.Source == "nccl-topo" {
				fromFile++
			}
		}
		if fromFile > 0 {
			fmt.Fprintf(w, "Classes of %d of %d pairs come from the NCCL topology file (PHB there means\nthrough the CPU, as NCCL says; it has no NODE); the others from sysfs.\n", fromFile, len(t.Links))
		}
	}
	if len(t.NICs) > 0 {
		fmt.Fprintln(w, "\nRDMA NICs:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NIC\tPCI\tNETDEV\tLINK\tRATE\tPORTS\tNUMA\tVFS")
		for _, n := range t.NICs {
			var ports []string
			rate := "-"
			for _, p := range n.Ports {
				ports = append(ports, fmt.Sprintf("%d:%s", p.Num, p.State))
				if p.Rate != "" {
					rate = p.Rate
				}
			}
			netdev := sysfs.Printable(n.Netdev)
			if netdev == "" {
				netdev = "-"
			}
			if n.NetdevPCI != "" {
				netdev += " (on " + n.NetdevPCI + ")"
			}
			vfs := "-"
			if n.TotalVFs > 0 {
				vfs = fmt.Sprintf("%d/%d", len(n.VFs), n.TotalVFs)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sysfs.Printable(n.RDMA), n.PCI, netdev, sysfs.Printable(n.LinkLayer),
				sysfs.Printable(rate), sysfs.Printable(strings.Join(ports, ",")), numa(n.NUMA), vfs)
		}
		tw.Flush()
	}
	if len(t.Rails) > 0 {
		fmt.Fprintln(w, "\nRails (best NIC per GPU, each NIC serving at most its share):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  GPU\tGPU PCI\tNIC\tNIC PCI\tNETDEV\tCLASS")
		for i, r := range t.Rails {
			n, _ := t.NIC(r.NIC)
			fmt.Fprintf(tw, "  GPU%d\t%s\t%s\t%s\t%s\t%s\n", i, r.GPU, sysfs.Printable(n.RDMA), r.NIC, sysfs.Printable(n.Netdev), r.Class)
		}
		tw.Flush()
	}
	if len(t.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings:")
		for _, wn := range t.Warnings {
			fmt.Fprintf(w, "  - %s\n", sysfs.Clip(wn.String(), maxWarning))
		}
	}
}
