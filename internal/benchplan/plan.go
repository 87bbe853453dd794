package benchplan

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Variant is how the benchmark traffic travels.
type Variant string

// Variants.
const (
	RDMA Variant = "rdma"
	// TCP runs over the same secondary network without RDMA: iperf3 for the
	// pod pair, NCCL sockets (NCCL_IB_DISABLE=1) for nccl-tests.
	TCP Variant = "tcp"
	// TCPPodNetwork is the TCP baseline with the secondary network removed
	// entirely: no networks annotation, no RDMA resource, traffic over the
	// pod network's eth0 (one published deployment's definition of TCP).
	TCPPodNetwork Variant = "tcp-podnet"
)

// Test selects which manifests to generate.
type Test string

// Tests.
const (
	Perftest  Test = "perftest"
	NCCLTests Test = "nccl"
	// OSU: MPIJobs running osu_latency and osu_bw between two nodes and
	// osu_allreduce across every worker, one rank per node.
	OSU Test = "osu"
	// Horovod: one MPIJob per node count in HorovodNodes running Horovod's
	// synthetic benchmark, for the training scaling table.
	Horovod Test = "horovod"
)

// Defaults.
const (
	DefaultNamespace     = "default"
	DefaultName          = "railyard-bench"
	DefaultResource      = "railyard.io/rdma_vf" // the pool deploy/railyard-agent.yaml ships
	DefaultGPUResource   = "nvidia.com/gpu"
	DefaultNetwork       = "railyard-system/railyard-rdma" // the chart's example NAD, in the namespace docs/install.md installs into
	DefaultPerftest      = "ib_write_bw"
	DefaultNCCLTest      = "all_reduce_perf"
	DefaultNCCLTestsDir  = "/opt/nccl-tests/build"
	DefaultGPUsPerNode   = 8
	DefaultOSUDir        = "/opt/osu-micro-benchmarks/libexec/osu-micro-benchmarks/mpi"
	DefaultHorovodScript = "/horovod/examples/pytorch/pytorch_synthetic_benchmark.py"
	NetworksAnnotation   = "k8s.v1.cni.cncf.io/networks"
	interfacePrefix      = "net" // Multus names the i-th secondary interface net<i+1>
	labelApp             = "app.kubernetes.io/name"
	labelComponent       = "app.kubernetes.io/component"
	labelVariant         = "railyard.io/bench-variant"
	labelJob             = "railyard.io/bench-job"
	DefaultIperfSeconds  = 30
	maxIperfSeconds      = 3600
	perftestPort         = 18515
	iperfPort            = 5201
	connectAttempts      = 60
	connectRetrySeconds  = 2
	defaultResourceCount = 1
)

// Options describe the manifests to generate.
type Options struct {
	Namespace string
	// Name prefixes every object name.
	Name     string
	Variants []Variant
	Tests    []Test
	// Nodes are node names: the perftest server runs on Nodes[0] and the
	// client on Nodes[1]; nccl-tests workers are confined to Nodes (one
	// per node) when given.
	Nodes []string
	// Workers is the number of nccl-tests worker pods; 0 means len(Nodes).
	Workers int
	// Rails are the RDMA resources (extended resources or DRA device
	// classes) every benchmark pod requests, each with the secondary
	// network attached for it. Empty means one rail: DefaultResource with
	// DefaultNetwork.
	Rails []Rail
	// Image must contain perftest, iperf3, nccl-tests under NCCLTestsDir,
	// Open MPI and sshd.
	Image        string
	GPUsPerNode  int
	GPUResource  string
	Perftest     string   // ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat
	PerftestArgs []string // default -a -F --report_gbits (bandwidth tests)
	// ServerAddress is the perftest/iperf3 server's address on the
	// secondary network when it is fixed (static IPAM); empty means the
	// server's headless Service name, whose address is on the pod network:
	// fine for perftest's out-of-band exchange, but then iperf3 measures the
	// pod network, not the RDMA NIC.
	ServerAddress string
	NCCLTest      string
	NCCLTestsDir  string
	NCCLArgs      []string // default -b 8 -e 8G -f 2 -g 1
	// NCCLEnv adds NCCL_* settings (for example NCCL_ALGO=Ring) to every
	// rank (nccl-tests and Horovod).
	NCCLEnv []corev1.EnvVar
	// OSUDir holds the OSU MPI benchmarks (pt2pt/osu_latency, pt2pt/osu_bw,
	// collective/osu_allreduce).
	OSUDir string
	// HorovodNodes are the node counts of the Horovod runs; empty means
	// 1, 2, 4... up to Workers.
	HorovodNodes  []int
	HorovodScript string   // a Horovod benchmark printing "Total img/sec on N GPU(s)"
	HorovodArgs   []string // default --model resnet50 --batch-size 64
	// ProbeImage holds the railyard binary for the TCP probe pair (the
	// railyard image); empty means Image.
	ProbeImage    string
	ProbeStreams  int    // parallel TCP streams; 0 means DefaultProbeStreams
	ProbeDuration string // how long the client sends (a Go duration); empty means DefaultProbeDuration
	// IperfSeconds is how long the perftest test's iperf3 client sends
	// (its --time, the TCP variants); 0 means DefaultIperfSeconds.
	IperfSeconds int
	// GPUDirect is the GPU and NICs of the GPUDirect pairs (ChooseGPUDirect);
	// needed by GPUDirectTest.
	GPUDirect *GPUDirect
	// PodResources (cpu, memory, hugepages-<size>; ParsePodResources) are
	// requested, equal to the limits, by every benchmark pod.
	PodResources corev1.ResourceList
	// BareMetal adds, with the perftest test, a hostNetwork perftest pair
	// on the same nodes (scenario bare-metal) for the pod-vs-bare-metal
	// check.
	BareMetal bool
}

func labels(o Options, component string, v Variant) map[string]string {
	return map[string]string{labelApp: o.Name, labelComponent: component, labelVariant: string(v)}
}

func podMeta(o Options, name, component string, v Variant) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: labels(o, component, v)}
	if nets := networksAnnotation(o.Rails); nets != "" {
		m.Annotations = map[string]string{NetworksAnnotation: nets}
	}
	return m
}

// securityContext adds IPC_LOCK (RDMA pins memory) and nothing else: no
// privileged mode, no privilege escalation.
func securityContext() *corev1.SecurityContext {
	f := false
	return &corev1.SecurityContext{
		Privileged:               &f,
		AllowPrivilegeEscalation: &f,
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}},
	}
}

// resources requests (and limits, which extended resources require to be
// equal) every extended-resource rail's RDMA resource and optionally GPUs,
// and claims RailsClaim when a rail is delivered by DRA.
func resources(o Options, gpus int) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	for _, r := range o.Rails {
		if r.Resource != "" {
			list[corev1.ResourceName(r.Resource)] = *resource.NewQuantity(int64(r.Count), resource.DecimalSI)
		}
	}
	if gpus > 0 {
		list[corev1.ResourceName(o.GPUResource)] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	req := corev1.ResourceRequirements{Requests: list.DeepCopy(), Limits: list}
	if hasDRA(o.Rails) {
		req.Claims = []corev1.ResourceClaim{{Name: RailsClaim}}
	}
	return req
}

func itoa(n int) string { return strconv.Itoa(n) }
