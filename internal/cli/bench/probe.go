package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/benchprobe"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/version"
)

func newProbeCommand(s iostreams.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Measure between two pods with Railyard's own probes (TCP)",
		Long: `probe runs Railyard's own measurements, built into the railyard binary and
image (which has no shell, iperf3 or perftest):
  tcp   TCP bandwidth between a server (--listen) and a client (--connect)
        over parallel streams; the client prints iperf3-compatible JSON
        naming the probe, which bench parse and bench report read as a TCP
        result (never as RDMA)`,
	}
	cmd.AddCommand(newProbeTCPCommand(s))
	return cmd
}

func newProbeTCPCommand(s iostreams.Streams) *cobra.Command {
	var listen, connect string
	var o benchprobe.ClientOptions
	var wait time.Duration
	var port int
	cmd := &cobra.Command{
		Use:   "tcp (--listen [HOST]:PORT | --connect HOST:PORT)",
		Short: "TCP bandwidth probe: one server, one client, parallel streams",
		Long: `tcp measures TCP bandwidth between two hosts or pods.

  railyard bench probe tcp --listen :5201
  railyard bench probe tcp --connect SERVER:5201 --streams 4 --duration 10s
  railyard bench probe tcp --connect 10.0.0.2 --port 5201   # HOST alone (an IPv6 address too)

The server serves one test and exits (0 when the test completed). The
client retries connecting for --wait (the server may start later), sends
over --streams TCP connections for --duration, and prints the result on
one line as iperf3-compatible JSON (start, intervals[].sum, end.sum_sent,
end.sum_received, error) whose start.version is "railyard-tcp-probe/1": a
TCP measurement over whatever interface the route to the server takes. It
exits non-zero when the test failed, after printing the report with its
error.`,
		Example: `  railyard bench probe tcp --listen :5201
  railyard bench probe tcp --connect SERVER:5201 --streams 4 --duration 10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (listen == "") == (connect == "") {
				return errors.New("give exactly one of --listen and --connect")
			}
			if listen != "" {
				ln, err := net.Listen("tcp", listen)
				if err != nil {
					return fmt.Errorf("tcp probe server: %w", err)
				}
				fmt.Fprintf(s.Out, "railyard tcp probe: listening on %s\n", ln.Addr())
				res, err := benchprobe.Serve(cmd.Context(), ln, benchprobe.ServerOptions{Wait: wait})
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "railyard tcp probe: received %d bytes over %d streams from %s in %.3f s: %.3f Gb/s (TCP)\n",
					res.Bytes, res.Streams, res.Client, res.Seconds, res.Gbps())
				return nil
			}
			if o.Interval < benchprobe.MinInterval {
				return fmt.Errorf("--interval %v: want at least %v (one row per interval)", o.Interval, benchprobe.MinInterval)
			}
			o.Addr, o.Wait, o.Version = serverAddr(connect, port), wait, "railyard "+version.String()
			rep, runErr := benchprobe.Run(cmd.Context(), o)
			// One line: a pod log interleaves stdout and stderr line by
			// line, so the report stays whole whatever else is logged.
			out, err := json.Marshal(rep)
			if err != nil {
				return errors.Join(runErr, fmt.Errorf("tcp probe report: %w", err))
			}
			fmt.Fprintf(s.Out, "%s\n", out)
			return runErr
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "", "serve one test on this address ([HOST]:PORT, e.g. :5201)")
	fl.StringVar(&connect, "connect", "", "run the test against the server at HOST:PORT, or HOST with --port")
	fl.IntVar(&port, "port", benchprobe.DefaultPort, "the server's port when --connect gives only a host")
	fl.IntVar(&o.Streams, "streams", benchprobe.DefaultStreams, "parallel TCP streams (client)")
	fl.DurationVar(&o.Duration, "duration", benchprobe.DefaultDuration, "how long the client sends")
	fl.DurationVar(&o.Interval, "interval", time.Second, "sampling interval of the client's rows (at least "+benchprobe.MinInterval.String()+")")
	fl.DurationVar(&wait, "wait", benchprobe.DefaultWait, "server: how long to wait for a client; client: how long to keep trying to connect")
	return cmd
}

// serverAddr is HOST:PORT as given, or HOST (a name, an IPv4 or a bare
// IPv6 address) joined with port.
func serverAddr(connect string, port int) string {
	if _, _, err := net.SplitHostPort(connect); err == nil {
		return connect
	}
	return net.JoinHostPort(strings.Trim(connect, "[]"), strconv.Itoa(port))
}
