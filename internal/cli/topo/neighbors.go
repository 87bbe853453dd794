package topo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/ibneighbor"
	"github.com/railyard-io/railyard/internal/lldp"
	"github.com/railyard-io/railyard/internal/nodefabric"
	"github.com/railyard-io/railyard/internal/topology"
)

// maxNeighborWait bounds --neighbors (as railyard fabric publish --wait).
const maxNeighborWait = 10 * time.Minute

// listenNeighbors listens for LLDP on every port of t that can hear it,
// all at once, for up to wait, and meanwhile asks each InfiniBand port's
// neighbor with smpquery (nodefabric.Neighbors).
func listenNeighbors(ctx context.Context, t *topology.Topology, wait time.Duration) ([]fabric.Port, error) {
	if wait < 0 || wait > maxNeighborWait {
		return nil, fmt.Errorf("--neighbors %s: want up to %s", wait, maxNeighborWait)
	}
	return nodefabric.Neighbors(ctx, fabric.PortsOf(t), lldp.ReceiveAll, ibneighbor.Exec{}, wait), nil
}

// writeNeighbors prints one row per port: its rail, NIC, netdev and the
// switch and port it reaches, or why none.
func writeNeighbors(w io.Writer, ports []fabric.Port, wait time.Duration) {
	fmt.Fprintf(w, "\nNeighbors (LLDP on Ethernet ports, listened %s; smpquery on InfiniBand ports):\n", wait)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RAIL\tNIC\tNETDEV\tSWITCH\tPORT")
	for _, p := range ports {
		rail := "-"
		if p.Rail >= 0 {
			rail = fmt.Sprint(p.Rail)
		}
		sw, port := p.Switch, p.SwitchPort
		if sw == "" {
			sw, port = "(none: "+strings.TrimPrefix(p.NoNeighbor, "port "+p.Netdev+": ")+")", ""
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", rail, p.NIC, dash(p.Netdev), sw, port)
	}
	_ = tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
