package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchverify"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
	"github.com/railyard-io/railyard/internal/termsafe"
)

// VerifyError carries bench verify's exit status: 1 warnings, 2 failures
// (as doctor and fabric).
type VerifyError struct{ Code int }

func (e *VerifyError) Error() string {
	if e.Code == 1 {
		return "the job has warnings"
	}
	return "the job is not on its RDMA fabric as it should be"
}

// ExitCode is the code the process exits with.
func (e *VerifyError) ExitCode() int { return e.Code }

// clientFunc returns the clientset bench verify reads, from a kubeconfig
// path and the bound of each request.
type clientFunc func(kubeconfig string, timeout time.Duration) (kubernetes.Interface, error)

func newVerifyCommand(s iostreams.Streams, connect clientFunc) *cobra.Command {
	var kubeconfig string
	var asJSON bool
	var o benchverify.Options
	cmd := &cobra.Command{
		Use:   "verify -l SELECTOR [-n NAMESPACE] [--container NAME] [--profile P] [--log-bytes N] [--json]",
		Short: "Check a running job: on RDMA, on its near NICs with GPUDirect, on the same rails across its pods",
		Long: `verify reads a job's pods (a label selector) from the cluster and judges,
from their own logs and the devices Railyard gave them:

  job-logs      the pods' logs were read and hold NCCL INFO lines
  nccl-network  NCCL used RDMA (IB, RoCE, an RDMA plugin) on every host; a
                fallback to TCP sockets fails when the pods hold RDMA devices
                (or --profile expects RDMA)
  nccl-gdr      GPUDirect RDMA on every HCA a GPU is near, and GDRDMA on the
                inter-node channels
  nccl-hosts    the hosts agree (GDRDMA, HCAs, RoCE GID index, MTU)
  job-devices   every pod got RDMA devices from Railyard
  job-near      each pod's NICs are PIX or PXB to one of its GPUs, and each
                GPU has such a NIC (from the DRA claims' attributes)
  job-rails     every pod is on the same rails (railyard.io/rail)
  job-hcas      NCCL used exactly the HCAs each pod got

Devices come from the pods' ResourceClaims (rdma.railyard.io devices with
their rail, leaf, RDMA device and per-GPU distance class; GPUs of other
drivers with their PCI address) and from the Multus network-status
annotation (the device-info Railyard writes), a whole NIC's rail from its
node's railyard.io/fabric-ports. Run the job with NCCL_DEBUG=INFO and
NCCL_DEBUG_SUBSYS=INIT,ENV,NET; an MPIJob's launcher log holds every rank's
lines, so select the launcher too.

Each container's log is read from its start, at most --log-bytes (NCCL
prints its INFO lines when a communicator starts); every API request is
bounded by --request-timeout. Exit status: 0 nothing wrong, 1 warnings, 2
failures. Names read from the cluster are printed with terminal control
characters escaped (--json leaves them to the JSON encoding).`,
		Example: `  railyard bench verify -l job-name=train
  railyard bench verify -n ml -l training.kubeflow.org/job-name=llama --profile roce-lossless
  railyard bench verify -l app=nccl-tests --container worker --log-bytes 4Mi --json | jq '.verdicts'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Namespace != "" {
				if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
					return fmt.Errorf("--namespace %q: not a namespace name: %s", o.Namespace, strings.Join(msgs, "; "))
				}
			}
			if o.Selector == "" {
				return fmt.Errorf("--selector (-l) is required: the labels of the job's pods, e.g. -l job-name=train")
			}
			if o.Profile != "" {
				if _, err := bench.ProfileNamed(o.Profile); err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
			}
			if o.RequestTimeout <= 0 {
				return fmt.Errorf("--request-timeout %v: want a positive duration", o.RequestTimeout)
			}
			c, err := connect(kubeconfig, o.RequestTimeout)
			if err != nil {
				return err
			}
			rep, err := benchverify.Verify(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			} else {
				err = printVerify(s.Out, rep)
			}
			if err != nil {
				return fmt.Errorf("writing the report: %w", err)
			}
			if st := rep.Status(); st != 0 {
				return &VerifyError{Code: st}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default KUBECONFIG, else ~/.kube/config)")
	fl.StringVarP(&o.Namespace, "namespace", "n", "default", "the job's namespace")
	fl.StringVarP(&o.Selector, "selector", "l", "", "label selector of the job's pods (required), e.g. job-name=train")
	fl.StringVar(&o.Container, "container", "", "read only this container's log (default every container of each pod)")
	fl.StringVar(&o.Profile, "profile", "", "the fabric the NCCL lines are judged by: "+strings.Join(bench.ProfileNames(), " | ")+
		" (default: RDMA expected where the pods hold RDMA devices)")
	fl.Var(byteSize{&o.LogBytes}, "log-bytes", fmt.Sprintf("read at most this much of each container's log, from its start (default %d MiB, at most %d MiB; suffixes Ki, Mi)",
		benchverify.DefaultLogBytes>>20, benchverify.MaxLogBytes>>20))
	fl.IntVar(&o.MaxPods, "max-pods", benchverify.DefaultMaxPods, "read at most this many pods (by name)")
	fl.DurationVar(&o.RequestTimeout, "request-timeout", benchverify.DefaultRequestTimeout, "bound of each API request, a log read included")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON: pods (logs, NCCL hosts, NICs, GPUs, notes), ncclTransport, verdicts")
	return cmd
}

// kubeClient is the clientset of the user's kubeconfig.
func kubeClient(kubeconfig string, timeout time.Duration) (kubernetes.Interface, error) {
	return kubeclient.New(kubeconfig, timeout)
}

// byteSize is a flag of a byte count with an optional Ki or Mi suffix.
type byteSize struct{ v *int64 }

func (b byteSize) String() string {
	if b.v == nil {
		return ""
	}
	return fmt.Sprint(*b.v)
}

func (b byteSize) Type() string { return "bytes" }

func (b byteSize) Set(s string) error {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "Mi"):
		mult, s = 1<<20, strings.TrimSuffix(s, "Mi")
	case strings.HasSuffix(s, "Ki"):
		mult, s = 1<<10, strings.TrimSuffix(s, "Ki")
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 || n > benchverify.MaxLogBytes/mult {
		return fmt.Errorf("want a size from 1 to %d MiB (e.g. 4Mi)", benchverify.MaxLogBytes>>20)
	}
	*b.v = n * mult
	return nil
}

// printVerify writes the report as text: a line per pod, NCCL's hosts,
// the verdicts.
func printVerify(w io.Writer, rep *benchverify.Report) error {
	fmt.Fprintf(w, "Job: %d pods in %s matching %s\n", len(rep.Pods), termsafe.Escape(rep.Namespace), termsafe.Escape(rep.Selector))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  POD\tNODE\tPHASE\tLOG\tNCCL HOST\tNICS (RDMA rail class)\tGPUS")
	for _, p := range rep.Pods {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Escape(p.Name), dash(p.Node), dash(p.Phase), logSummary(p.Logs),
			dash(strings.Join(p.Hosts, ",")), dash(nicsSummary(p.NICs)), dash(gpusSummary(p.GPUs)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range rep.Pods {
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  note: %s: %s\n", termsafe.Escape(p.Name), termsafe.Escape(n))
		}
	}
	if rep.NCCL != nil {
		fmt.Fprintf(w, "NCCL %s INFO lines of %d host(s):\n", termsafe.Escape(rep.NCCL.Version), len(rep.NCCL.Hosts))
		for i, h := range rep.NCCL.Hosts {
			if i == maxPrintedHosts {
				fmt.Fprintf(w, "    ... and %d more hosts (--json lists them)\n", len(rep.NCCL.Hosts)-i)
				break
			}
			fmt.Fprintf(w, "    %s: %s\n", termsafe.Escape(orNoHost(h.Host)), termsafe.Escape(hostSummary(h)))
		}
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range rep.Verdicts {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", strings.ToUpper(string(v.Status)), v.Check, termsafe.Escape(v.Reason))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return termsafe.Escape(s)
}

func logSummary(logs []benchverify.Log) string {
	var n int
	var cut, failed bool
	for _, l := range logs {
		n += l.Bytes
		cut = cut || l.Truncated
		failed = failed || l.Error != ""
	}
	s := fmt.Sprintf("%d B", n)
	if n >= 1<<10 {
		s = fmt.Sprintf("%d KiB", n>>10)
	}
	if cut {
		s += " (head)"
	}
	if failed {
		s += " (error)"
	}
	return s
}

func nicsSummary(nics []benchverify.NIC) string {
	parts := make([]string, len(nics))
	for i, n := range nics {
		s := n.RDMA
		if s == "" {
			s = n.PCI
		}
		rail := "?"
		if n.Rail != nil {
			rail = fmt.Sprint(*n.Rail)
		}
		parts[i] = s + " " + rail
		if n.Class != "" {
			parts[i] += " " + n.Class
		}
	}
	return strings.Join(parts, ", ")
}

func gpusSummary(gpus []benchverify.GPU) string {
	parts := make([]string, len(gpus))
	for i, g := range gpus {
		parts[i] = g.PCI
		if parts[i] == "" {
			parts[i] = g.Device
		}
	}
	return strings.Join(parts, ", ")
}
