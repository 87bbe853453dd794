package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/topo"
	"github.com/railyard-io/railyard/internal/topology"
)

func newPlanCommand(s iostreams.Streams) *cobra.Command {
	var o benchplan.Options
	var variant, perftestArgs, ncclArgs, horovodArgs string
	var tests, env, resources, deviceClasses, networks []string
	var resourceCount int
	var source topo.Source
	var gpudirectGPU, farClass, podResources string
	cmd := &cobra.Command{
		Use:   "plan --image IMAGE --nodes A,B [flags]",
		Short: "Print the Kubernetes manifests that run perftest, nccl-tests, OSU and Horovod on Railyard's resources",
		Long: `plan prints multi-document YAML to apply with kubectl:

  - a perftest server/client pod pair on the first two --nodes (with a
    headless Service so the client finds the server), and
  - an nccl-tests MPIJob (kubeflow.org/v2beta1, needs the MPI Operator)
    with one worker per node,
  - with --tests probe: Railyard's own TCP probe pair (railyard bench probe
    tcp, from --probe-image, the railyard image), in the TCP variants only:
    a TCP measurement that needs no RDMA, perftest or shell,
  - with --tests osu: MPIJobs for osu_latency, osu_bw (two nodes) and
    osu_allreduce (every worker),
  - with --tests horovod: a Horovod synthetic-benchmark MPIJob per node
    count (--horovod-nodes, default 1,2,4...) for bench report's scaling
    table,

each in an RDMA variant and a TCP variant over the same secondary network
(iperf3 for the pair, NCCL_IB_DISABLE=1 for NCCL, Open MPI's TCP transport
for OSU), and with --variant tcp-podnet or all a TCP baseline with the
secondary network removed entirely (pod network, eth0). Every benchmark pod
requests --resource, carries the --network annotation and adds only the
IPC_LOCK capability, never privileged mode.

Several rails: repeat --resource and --network; they pair by position, and
every benchmark pod requests every resource and attaches every network
(k8s.v1.cni.cncf.io/networks: a,b). --resource NAME=COUNT sets one rail's
count, --resource-count the others'. Unequal numbers of --resource and
--network are an error (--network "" is a rail without a network).

  railyard bench plan --image IMAGE --nodes a,b \
    --resource intel.com/sriov_111 --network sriov-111 \
    --resource intel.com/sriov_112 --network sriov-112

Rails delivered by DRA (resource.k8s.io/v1): --device-class NAME[=COUNT]
names a DeviceClass instead of an extended resource. Each run gets one
ResourceClaimTemplate, <run>-rails, with one request per such rail, and
every pod of the run claims from it. Rails are the --resource ones, then the
--device-class ones; --network pairs with that list by position, and
without --network no rail gets one (the container runtime's chained CNI
configuration attaches the claimed NIC) and no default --resource is added.
bench run then finds the server's address in the claim's
status.devices[].networkData when the pod has no Multus network-status:
  railyard bench plan --image IMAGE --nodes gpu-1,gpu-2 --tests probe --variant tcp --device-class railyard.io-rail0

GPUDirect RDMA, aligned against unaligned: --tests gpudirect with the
node's topology (--machine NAME or --sysfs DIR; --gpudirect-gpu picks the
GPU) plans two perftest pairs with --use_cuda on one GPU, one through that
GPU's rail NIC and one through a far NIC (the farthest, or the class
--far-class names: PHB for the other switch on the same socket, as in the
published 10.5 vs 3.5 GB/s case), every pod taking every GPU of its node;
bench report judges the pair (gpudirect-near vs gpudirect-far) as a ratio:
  railyard bench plan --image IMAGE --nodes a,b --tests gpudirect --machine dgx-h100
  railyard bench plan --image IMAGE --nodes a,b --tests gpudirect --sysfs /sys --far-class PHB

What published RDMA pods carry: --pod-resources requests hugepages, CPUs
and memory (limits equal, so the pod is Guaranteed and a Topology Manager
pins it); --bare-metal adds a hostNetwork perftest pair on the same nodes
(scenario bare-metal) that bench report compares the rdma pods with;
perftest -R (rdma_cm) needs --server-address, the server's address on the
secondary network (the Service name resolves to the pod network):
  railyard bench plan --image IMAGE --nodes a,b --variant rdma --bare-metal \
    --pod-resources hugepages-1Gi=4Gi,cpu=6,memory=8Gi
  railyard bench plan --image IMAGE --nodes a,b --variant rdma --tests perftest \
    --perftest-args "-R -a -F --report_gbits" --server-address 192.168.111.10

Run the pod pairs with bench run -f (it writes the report), or apply with
kubectl, collect the outputs with kubectl logs and feed them to bench report.`,
		Example: `  railyard bench plan --image IMAGE --nodes a,b > plan.yaml
  railyard bench plan --image IMAGE --nodes a,b --variant rdma --tests perftest --bare-metal \
    --pod-resources hugepages-1Gi=4Gi,cpu=6,memory=8Gi
  railyard bench plan --image IMAGE --nodes a,b --tests gpudirect --sysfs /sys --far-class PHB
  railyard bench plan --image IMAGE --nodes gpu-1,gpu-2 --tests probe --variant tcp --device-class railyard.io-rail0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch variant {
			case "both":
				o.Variants = []benchplan.Variant{benchplan.RDMA, benchplan.TCP}
			case "all":
				o.Variants = []benchplan.Variant{benchplan.RDMA, benchplan.TCP, benchplan.TCPPodNetwork}
			case "rdma", "tcp", "tcp-podnet":
				o.Variants = []benchplan.Variant{benchplan.Variant(variant)}
			default:
				return fmt.Errorf("--variant %q: want rdma, tcp, tcp-podnet, both (rdma and tcp) or all", variant)
			}
			if cmd.Flags().Changed("horovod-args") {
				o.HorovodArgs = strings.Fields(horovodArgs)
			}
			for _, t := range tests {
				o.Tests = append(o.Tests, benchplan.Test(t))
			}
			if cmd.Flags().Changed("perftest-args") {
				o.PerftestArgs = strings.Fields(perftestArgs)
			}
			if cmd.Flags().Changed("nccl-args") {
				o.NCCLArgs = strings.Fields(ncclArgs)
			}
			if resourceCount < 1 {
				return fmt.Errorf("--resource-count %d: want at least 1", resourceCount)
			}
			rails, err := benchplan.ParseRails(resources, deviceClasses, networks, resourceCount)
			if err != nil {
				return err
			}
			o.Rails = rails
			var errs []error
			for _, kv := range env {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					errs = append(errs, fmt.Errorf("--nccl-env %q: want NAME=VALUE", kv))
					continue
				}
				o.NCCLEnv = append(o.NCCLEnv, corev1.EnvVar{Name: k, Value: v})
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			if podResources != "" {
				if o.PodResources, err = benchplan.ParsePodResources(podResources); err != nil {
					return fmt.Errorf("--pod-resources: %w", err)
				}
			}
			if slices.Contains(o.Tests, benchplan.GPUDirectTest) {
				if source.Sysfs == "" && source.Machine == "" {
					return errors.New("--tests gpudirect needs the node's topology: --machine NAME or --sysfs DIR (--sysfs /sys on a node like the benchmark's)")
				}
				t, desc, err := source.Load(cmd.Context())
				if err != nil {
					return err
				}
				fc := topology.ClassUnknown
				if farClass != "" {
					if fc, err = topology.ParseClass(farClass); err != nil || fc.GPUDirect() {
						return fmt.Errorf("--far-class %q: want PHB, NODE or SYS (a class NCCL uses no GPUDirect RDMA across)", farClass)
					}
				}
				g, err := benchplan.ChooseGPUDirect(t, gpudirectGPU, fc)
				if err != nil {
					return fmt.Errorf("%s: %w", desc, err)
				}
				o.GPUDirect = &g
				fmt.Fprintf(s.ErrOut, "bench plan: gpudirect from %s: GPU %s (CUDA %d of %d): near %s %s (%s), far %s %s (%s)\n",
					desc, g.GPU, g.CUDAIndex, g.GPUs, g.Near.RDMA, g.Near.PCI, g.Near.Class, g.Far.RDMA, g.Far.PCI, g.Far.Class)
			}
			objs, err := benchplan.Objects(o)
			if err != nil {
				return err
			}
			y, err := benchplan.YAML(objs)
			if err != nil {
				return err
			}
			_, err = s.Out.Write(y)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Image, "image", "", "container image with perftest, iperf3, nccl-tests, Open MPI and sshd (required)")
	fl.StringSliceVar(&o.Nodes, "nodes", nil, "node names: perftest server on the first, client on the second; nccl-tests workers one per node")
	fl.IntVar(&o.Workers, "workers", 0, "nccl-tests worker pods (default: one per --nodes entry)")
	fl.StringArrayVar(&resources, "resource", nil, "extended resource of an RDMA pool, NAME or NAME=COUNT; repeat for several rails (default "+benchplan.DefaultResource+")")
	fl.StringArrayVar(&deviceClasses, "device-class", nil, "DRA DeviceClass of a rail, NAME or NAME=COUNT, claimed through one ResourceClaimTemplate per run; repeat for several rails (after the --resource rails)")
	fl.IntVar(&resourceCount, "resource-count", 1, "how many of each --resource or --device-class without =COUNT each benchmark pod requests")
	fl.StringArrayVar(&networks, "network", nil, "secondary network of the rail at the same position (--resource rails, then --device-class ones), [namespace/]name[@ifname] (\"\" for none; default "+benchplan.DefaultNetwork+", none with --device-class)")
	fl.IntVar(&o.GPUsPerNode, "gpus-per-node", benchplan.DefaultGPUsPerNode, "GPUs (and MPI ranks) per nccl-tests worker")
	fl.StringVar(&o.GPUResource, "gpu-resource", benchplan.DefaultGPUResource, "GPU extended resource")
	fl.StringVar(&variant, "variant", "both", "rdma, tcp (over the secondary network), tcp-podnet (no secondary network), both (rdma and tcp) or all")
	fl.StringSliceVar(&tests, "tests", []string{"perftest", "nccl"}, "which manifests: perftest, probe (Railyard's TCP probe pair, tcp variants only), gpudirect (needs --machine or --sysfs), nccl, osu, horovod")
	source.AddFlags(cmd)
	fl.StringVar(&farClass, "far-class", "", "--tests gpudirect: the far NIC's class to the GPU, PHB (the other switch on the socket, the published 10.5 vs 3.5 GB/s case), NODE or SYS (default the farthest)")
	fl.StringVar(&gpudirectGPU, "gpudirect-gpu", "", "--tests gpudirect: the GPU, an index in PCI order or a PCI address (default the first with a GPUDirect rail)")
	fl.StringVar(&o.ProbeImage, "probe-image", "", "image with the railyard binary for --tests probe (default --image)")
	fl.IntVar(&o.ProbeStreams, "probe-streams", benchplan.DefaultProbeStreams, "parallel TCP streams of the probe")
	fl.StringVar(&o.ProbeDuration, "probe-duration", benchplan.DefaultProbeDuration, "how long the probe client sends")
	fl.IntVar(&o.IperfSeconds, "iperf-seconds", benchplan.DefaultIperfSeconds, "how long the perftest test's iperf3 client sends (the tcp variants), 1 to 3600")
	fl.StringVar(&o.OSUDir, "osu-dir", benchplan.DefaultOSUDir, "directory of the OSU MPI benchmarks in the image (pt2pt/, collective/)")
	fl.IntSliceVar(&o.HorovodNodes, "horovod-nodes", nil, "node counts of the Horovod runs (default 1,2,4... up to the workers)")
	fl.StringVar(&o.HorovodScript, "horovod-script", benchplan.DefaultHorovodScript, "Horovod benchmark script in the image")
	fl.StringVar(&horovodArgs, "horovod-args", "--model resnet50 --batch-size 64", "arguments of the Horovod script")
	fl.StringVar(&o.Namespace, "namespace", benchplan.DefaultNamespace, "namespace of the objects")
	fl.StringVar(&o.Name, "name", benchplan.DefaultName, "name prefix of the objects")
	fl.StringVar(&o.Perftest, "perftest", benchplan.DefaultPerftest, "perftest binary (ib_write_bw, ib_read_lat, ...)")
	fl.StringVar(&perftestArgs, "perftest-args", "-a -F [--report_gbits]", "perftest arguments (server and client)")
	fl.StringVar(&o.ServerAddress, "server-address", "", "the perftest server's address on the secondary network when fixed (default: its Service name; perftest -R needs it)")
	fl.StringVar(&podResources, "pod-resources", "", "cpu, memory and hugepages every benchmark pod requests (limits equal: Guaranteed, so a Topology Manager pins it), e.g. hugepages-1Gi=4Gi,cpu=6,memory=8Gi")
	fl.BoolVar(&o.BareMetal, "bare-metal", false, "add a hostNetwork perftest pair on the same nodes (scenario bare-metal) as the pods' baseline; privileged, with the host's /dev/infiniband")
	fl.StringVar(&o.NCCLTest, "nccl-test", benchplan.DefaultNCCLTest, "nccl-tests binary")
	fl.StringVar(&o.NCCLTestsDir, "nccl-tests-dir", benchplan.DefaultNCCLTestsDir, "directory of the nccl-tests binaries in the image")
	fl.StringVar(&ncclArgs, "nccl-args", "-b 8 -e 8G -f 2 -g 1", "nccl-tests arguments")
	fl.StringArrayVar(&env, "nccl-env", nil, "NAME=VALUE for every nccl-tests rank, e.g. NCCL_ALGO=Ring (repeatable)")
	return cmd
}
