package binding

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the store's bindings, one per line, for
// `railyard topo --bindings`: pool, token, device (and its RDMA device when
// the view knows it), pod, container, binder, class to the pod's GPUs and
// the GPUs.
func (s *Store) WriteTable(w io.Writer) error {
	bs, err := s.Bindings()
	if err != nil {
		return err
	}
	v, _ := s.View() // optional: RDMA names
	fmt.Fprintf(w, "\nLate bindings (%s): %d\n", s.dir, len(bs))
	if len(bs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tTOKEN\tDEVICE\tRDMA\tPOD\tCONTAINER\tBY\tCLASS\tGPUS")
	for _, b := range bs {
		rdma := "-"
		if v != nil {
			if p, ok := v.PoolByResource(b.Resource); ok {
				if d, ok := p.Device(b.Device); ok && d.RDMA != "" {
					rdma = d.RDMA
				}
			}
		}
		pod := b.Pod.String()
		if b.Pod.Name == "" {
			pod = "(init container)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Resource, b.Token, b.Device, rdma, pod,
			dash(b.Container), b.By, dash(b.Class), dash(strings.Join(b.GPUs, ",")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
