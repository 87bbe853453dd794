package benchplan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// withDefaults fills zero fields and checks the rest; it returns every
// problem found, in the order of the checks below.
func (o Options) withDefaults() (Options, error) {
	o = o.filled()
	var errs []error
	errs = append(errs, o.checkImagesAndCounts()...)
	errs = append(errs, o.checkTests()...)
	errs = append(errs, o.checkTools()...)
	errs = append(errs, o.checkObjects()...)
	return o, errors.Join(errs...)
}

// filled returns o with its zero fields set to their defaults.
func (o Options) filled() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if len(o.Variants) == 0 {
		o.Variants = []Variant{RDMA, TCP}
	}
	if len(o.Tests) == 0 {
		o.Tests = []Test{Perftest, NCCLTests}
	}
	if len(o.Rails) == 0 {
		o.Rails = []Rail{{Resource: DefaultResource, Network: DefaultNetwork}}
	}
	o.Rails = append([]Rail(nil), o.Rails...)
	for i := range o.Rails {
		if o.Rails[i].Count == 0 {
			o.Rails[i].Count = defaultResourceCount
		}
	}
	if o.GPUsPerNode == 0 {
		o.GPUsPerNode = DefaultGPUsPerNode
	}
	if o.GPUResource == "" {
		o.GPUResource = DefaultGPUResource
	}
	if o.Perftest == "" {
		o.Perftest = DefaultPerftest
	}
	if o.PerftestArgs == nil {
		o.PerftestArgs = []string{"-a", "-F"}
		if strings.HasSuffix(o.Perftest, "_bw") {
			o.PerftestArgs = append(o.PerftestArgs, "--report_gbits")
		}
	}
	if o.NCCLTest == "" {
		o.NCCLTest = DefaultNCCLTest
	}
	if o.NCCLTestsDir == "" {
		o.NCCLTestsDir = DefaultNCCLTestsDir
	}
	if o.NCCLArgs == nil {
		o.NCCLArgs = []string{"-b", "8", "-e", "8G", "-f", "2", "-g", "1"}
	}
	if o.Workers == 0 {
		o.Workers = len(o.Nodes)
	}
	if o.OSUDir == "" {
		o.OSUDir = DefaultOSUDir
	}
	if o.HorovodScript == "" {
		o.HorovodScript = DefaultHorovodScript
	}
	if o.HorovodArgs == nil {
		o.HorovodArgs = []string{"--model", "resnet50", "--batch-size", "64"}
	}
	if o.ProbeImage == "" {
		o.ProbeImage = o.Image
	}
	if o.ProbeStreams == 0 {
		o.ProbeStreams = DefaultProbeStreams
	}
	if o.ProbeDuration == "" {
		o.ProbeDuration = DefaultProbeDuration
	}
	if o.IperfSeconds == 0 {
		o.IperfSeconds = DefaultIperfSeconds
	}
	if len(o.HorovodNodes) == 0 {
		for n := 1; n <= o.Workers; n *= 2 {
			o.HorovodNodes = append(o.HorovodNodes, n)
		}
	}
	return o
}

// checkImagesAndCounts checks the images, the GPU resource, iperf3's time
// and the variants.
func (o Options) checkImagesAndCounts() []error {
	var errs []error
	if o.Image == "" {
		errs = append(errs, errors.New("image: required (it must contain perftest, iperf3, nccl-tests, Open MPI and sshd)"))
	} else if err := validateImage(o.Image); err != nil {
		errs = append(errs, fmt.Errorf("image: %w", err))
	}
	if o.ProbeImage != o.Image {
		if err := validateImage(o.ProbeImage); err != nil {
			errs = append(errs, fmt.Errorf("probe image: %w", err))
		}
	}
	if err := validateResource(o.GPUResource); err != nil {
		errs = append(errs, fmt.Errorf("gpu resource %q: %w", o.GPUResource, err))
	}
	if o.IperfSeconds < 1 || o.IperfSeconds > maxIperfSeconds {
		errs = append(errs, fmt.Errorf("iperf seconds %d: want 1 to %d", o.IperfSeconds, maxIperfSeconds))
	}
	for _, v := range o.Variants {
		if v != RDMA && v != TCP && v != TCPPodNetwork {
			errs = append(errs, fmt.Errorf("variant %q: want rdma, tcp or tcp-podnet", v))
		}
	}
	return errs
}

// checkTests checks what each test needs: its nodes, workers, probe,
// GPUDirect pairs or Horovod runs.
func (o Options) checkTests() []error {
	var errs []error
	for _, t := range o.Tests {
		switch t {
		case Perftest:
			if len(o.Nodes) < 2 {
				errs = append(errs, fmt.Errorf("nodes: the perftest pair needs two node names, got %d", len(o.Nodes)))
			}
		case TCPProbe:
			errs = append(errs, validateProbe(o)...)
		case GPUDirectTest:
			errs = append(errs, validateGPUDirect(o)...)
		case NCCLTests:
			if o.Workers < 1 {
				errs = append(errs, errors.New("workers: nccl-tests needs at least one worker (give --nodes or --workers)"))
			}
			if len(o.Nodes) > 0 && o.Workers > len(o.Nodes) {
				errs = append(errs, fmt.Errorf("workers: %d workers on %d nodes, one worker per node", o.Workers, len(o.Nodes)))
			}
		case OSU:
			if o.Workers < 2 {
				errs = append(errs, fmt.Errorf("workers: the OSU runs need two nodes, got %d workers", o.Workers))
			}
		case Horovod:
			for _, n := range o.HorovodNodes {
				if n < 1 || n > o.Workers || (len(o.Nodes) > 0 && n > len(o.Nodes)) {
					errs = append(errs, fmt.Errorf("horovod nodes: %d: want 1 to %d (the workers, one per node)", n, o.Workers))
				}
			}
			if strings.ContainsAny(o.HorovodScript, " \t\n") || !strings.HasPrefix(o.HorovodScript, "/") {
				errs = append(errs, fmt.Errorf("horovod script %q: want an absolute path in the image", o.HorovodScript))
			}
		default:
			errs = append(errs, fmt.Errorf("test %q: want perftest, probe, gpudirect, nccl, osu or horovod", t))
		}
	}
	return errs
}

// checkTools checks the benchmark binaries, the rails, nodes and server
// address, and the options that need another (perftest -R, bare metal).
func (o Options) checkTools() []error {
	var errs []error
	if !perftestBinary.MatchString(o.Perftest) {
		errs = append(errs, fmt.Errorf("perftest %q: want an ib_* binary such as ib_write_bw", o.Perftest))
	}
	if strings.ContainsAny(o.NCCLTest, "/ ") {
		errs = append(errs, fmt.Errorf("nccl test %q: want a binary name such as all_reduce_perf", o.NCCLTest))
	}
	if o.GPUsPerNode < 0 || o.Workers < 0 {
		errs = append(errs, errors.New("counts must not be negative"))
	}
	errs = append(errs, validateRails(o.Rails)...)
	errs = append(errs, validateNodes(o.Nodes)...)
	if o.ServerAddress != "" {
		if err := validateAddress(o.ServerAddress); err != nil {
			errs = append(errs, err)
		}
	}
	if usesRDMACM(o.PerftestArgs) && o.ServerAddress == "" && slices.Contains(o.Variants, RDMA) &&
		(slices.Contains(o.Tests, Perftest) || slices.Contains(o.Tests, GPUDirectTest)) {
		errs = append(errs, errors.New("perftest -R (rdma_cm) connects to the server's address on the RDMA interface, "+
			"and the server's Service name resolves to its pod-network address: give --server-address, the server's "+
			"secondary-network address (static IPAM), or drop -R"))
	}
	if o.BareMetal && !slices.Contains(o.Tests, Perftest) {
		errs = append(errs, errors.New("bare metal: the baseline is a perftest pair; add the perftest test"))
	}
	return errs
}

// checkObjects checks what goes into the objects: pod resources, names
// and NCCL environment variables.
func (o Options) checkObjects() []error {
	var errs []error
	for k, q := range o.PodResources {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory && !strings.HasPrefix(string(k), corev1.ResourceHugePagesPrefix) || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("pod resource %s=%s: want a positive cpu, memory or hugepages-<size>", k, q.String()))
		}
	}
	// The MPI Operator names pods <job>-launcher and <job>-worker-<i>.
	for _, msg := range validation.IsDNS1123Label(o.Name + "-osu-allreduce-" + string(TCPPodNetwork) + "-launcher") {
		errs = append(errs, fmt.Errorf("name %q: %s", o.Name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(o.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q: %s", o.Namespace, msg))
	}
	for _, e := range o.NCCLEnv {
		if e.Name == "" {
			errs = append(errs, errors.New("nccl env: empty name"))
		} else if msgs := validation.IsEnvVarName(e.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("nccl env %q: %s", e.Name, strings.Join(msgs, "; ")))
		}
	}
	return errs
}
