package bench

import (
	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// NewCommand returns the `railyard bench` command and its subcommands.
func NewCommand(s iostreams.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Parse, judge and plot RDMA benchmark results; generate the manifests that run them",
		Long: `bench turns saved outputs of perftest (ib_*_bw, ib_*_lat, --out_json), NVIDIA
nccl-tests, the OSU micro-benchmarks, iperf3 --json and training logs
(Horovod, tf_cnn_benchmarks, DeepSpeed, Megatron-LM) into verdicts, a
training scaling table and charts:

  parse    parse outputs into one JSON shape
  report   judge labelled results (rdma, tcp, pod, bare-metal...) against the
           line rate and each other; write an HTML report with charts
  plan     print the Kubernetes manifests that run the benchmarks on
           Railyard's resources (perftest pod pair, nccl-tests, OSU and
           Horovod MPIJobs)
  run      run a plan's pod pairs and MPIJobs (MPI Operator) on a cluster:
           apply, wait, collect logs, judge, write the report, clean up
  probe    Railyard's own measurements between two pods (tcp: TCP bandwidth)
  verify   check a running job from its pods' logs and devices: on RDMA, on
           its near NICs with GPUDirect RDMA, on the same rails`,
	}
	cmd.AddCommand(newParseCommand(s), newReportCommand(s), newPlanCommand(s), newRunCommand(s, kubeconfigCluster), newProbeCommand(s),
		newVerifyCommand(s, kubeClient))
	return cmd
}
