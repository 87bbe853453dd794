package benchplan

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/topology"
)

// GPUDirectTest is the GPUDirect perftest pair: perftest --use_cuda on one
// GPU with that GPU's rail NIC, and the same run with a deliberately far
// NIC, so the aligned/unaligned gap (10.5 vs 3.5 GB/s on an 8-GPU/4-NIC
// node) is measured on the user's hardware. RDMA variant only; it needs
// Options.GPUDirect (ChooseGPUDirect).
const GPUDirectTest Test = "gpudirect"

// Labels and annotations of the GPUDirect runs.
const (
	// LabelScenario overrides the variant as the run's scenario in bench
	// run's report (gpudirect-near, gpudirect-far).
	LabelScenario = "railyard.io/bench-scenario"
	// AnnotationAfterRun, on every pod of a run, names the run that must
	// finish before bench run creates this one: the far pair waits for the
	// near pair, since both take every GPU of their nodes.
	AnnotationAfterRun = "railyard.io/bench-after-run"
	// LabelGPUDirectClass, on every object of a GPUDirect run, is its
	// NIC's class to the GPU (PIX, PHB...): bench run hands the pair's
	// classes to the gpudirect-alignment check.
	LabelGPUDirectClass = "railyard.io/bench-gpudirect-class"
	// ScenarioGPUDirectNear and ScenarioGPUDirectFar name the two runs.
	// bench's gpudirect-alignment check judges them as a pair.
	ScenarioGPUDirectNear = bench.ScenarioGPUDirectNear
	ScenarioGPUDirectFar  = bench.ScenarioGPUDirectFar
)

// rdmaName matches RDMA device names (mlx5_0, rocep4s0f0, ibp24s0).
var rdmaName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// GPUDirect is what the GPUDirect pair measures: one GPU, its rail NIC and
// a far NIC, chosen from the node's topology model.
type GPUDirect struct {
	GPU string // PCI address
	// CUDAIndex is the GPU's index among the node's GPUs in PCI bus order:
	// the pods take every GPU of the node and set
	// CUDA_DEVICE_ORDER=PCI_BUS_ID, so it is perftest's --use_cuda.
	CUDAIndex int
	GPUs      int // the node's GPU count (what each pod requests)
	Near, Far GPUDirectNIC
}

// GPUDirectNIC is one NIC of the pair.
type GPUDirectNIC struct {
	PCI   string
	RDMA  string // the RDMA device perftest's -d names
	Class topology.Class
}

// ChooseGPUDirect picks the GPU (gpu: a PCI address or an index in PCI
// order; "" for the first GPU whose rail allows GPUDirect RDMA, PIX or
// PXB), its rail NIC, and a far healthy NIC of the same link layer: of
// class farClass (PHB: the other switch on the same socket, the published
// 10.5 vs 3.5 GB/s case; NODE; SYS), or the farthest for ClassUnknown
// (ties: the same port rate as the rail, then PCI order).
func ChooseGPUDirect(t *topology.Topology, gpu string, farClass topology.Class) (GPUDirect, error) {
	if len(t.GPUs) == 0 || len(t.NICs) < 2 {
		return GPUDirect{}, fmt.Errorf("gpudirect: the topology has %d GPUs and %d RDMA NICs; the pair needs a GPU and two NICs", len(t.GPUs), len(t.NICs))
	}
	idx := -1
	switch {
	case gpu == "":
		for i, g := range t.GPUs {
			if r, ok := t.Rail(g.PCI); ok && r.Class.GPUDirect() {
				idx = i
				break
			}
		}
		if idx < 0 {
			return GPUDirect{}, errors.New("gpudirect: no GPU has a rail NIC within PXB (GPUDirect RDMA); name one with --gpudirect-gpu")
		}
	default:
		if n, err := strconv.Atoi(gpu); err == nil {
			if n < 0 || n >= len(t.GPUs) {
				return GPUDirect{}, fmt.Errorf("gpudirect: GPU %d: the topology has GPUs 0 to %d", n, len(t.GPUs)-1)
			}
			idx = n
			break
		}
		addr, err := pciaddr.ParseOptionalDomain(gpu)
		if err != nil {
			return GPUDirect{}, fmt.Errorf("gpudirect: GPU %q: want an index or a PCI address: %w", gpu, err)
		}
		idx = slices.IndexFunc(t.GPUs, func(g topology.GPU) bool { return g.PCI == addr.String() })
		if idx < 0 {
			return GPUDirect{}, fmt.Errorf("gpudirect: GPU %s is not in the topology", addr)
		}
	}
	g := t.GPUs[idx]
	rail, ok := t.Rail(g.PCI)
	if !ok {
		return GPUDirect{}, fmt.Errorf("gpudirect: GPU %s has no rail NIC", g.PCI)
	}
	near, _ := t.NIC(rail.NIC)
	if near.RDMA == "" {
		return GPUDirect{}, fmt.Errorf("gpudirect: rail NIC %s of GPU %s has no RDMA device", near.PCI, g.PCI)
	}
	var far *topology.NIC
	var seen []string // the classes of the candidates, for the error
	for i := range t.NICs {
		n := &t.NICs[i]
		if n.PCI == near.PCI || n.RDMA == "" || !n.Healthy() || n.LinkLayer != near.LinkLayer {
			continue
		}
		c := t.Class(g.PCI, n.PCI)
		seen = append(seen, n.RDMA+" "+c.String())
		if farClass != topology.ClassUnknown && c != farClass {
			continue
		}
		if far == nil || farther(t, g.PCI, n, far, near) {
			far = n
		}
	}
	if far == nil && farClass != topology.ClassUnknown {
		return GPUDirect{}, fmt.Errorf("gpudirect: GPU %s has no healthy %s NIC of class %s besides its rail %s (the others: %s)",
			g.PCI, near.LinkLayer, farClass, near.RDMA, orNone(seen))
	}
	if far == nil {
		return GPUDirect{}, fmt.Errorf("gpudirect: no other healthy %s NIC than the rail %s", near.LinkLayer, near.RDMA)
	}
	if fc := t.Class(g.PCI, far.PCI); fc.Rank() <= rail.Class.Rank() {
		return GPUDirect{}, fmt.Errorf("gpudirect: GPU %s: every other NIC is as close as its rail %s (%s): nothing to compare", g.PCI, near.RDMA, rail.Class)
	}
	return GPUDirect{GPU: g.PCI, CUDAIndex: idx, GPUs: len(t.GPUs),
		Near: GPUDirectNIC{PCI: near.PCI, RDMA: near.RDMA, Class: rail.Class},
		Far:  GPUDirectNIC{PCI: far.PCI, RDMA: far.RDMA, Class: t.Class(g.PCI, far.PCI)}}, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// farther reports whether NIC a is a better far NIC than b for gpu: a
// worse class, else the rail's port rate, else (NICs are in PCI order) no.
func farther(t *topology.Topology, gpu string, a, b *topology.NIC, near topology.NIC) bool {
	ca, cb := t.Class(gpu, a.PCI).Rank(), t.Class(gpu, b.PCI).Rank()
	if ca != cb {
		return ca > cb
	}
	return rate(*a) == rate(near) && rate(*b) != rate(near)
}

func rate(n topology.NIC) float64 {
	if len(n.Ports) == 0 {
		return 0
	}
	return n.Ports[0].RateGbps
}

// gpudirectPairs are the near and far perftest pairs (a Service and two
// pods each): perftest -d <NIC> --use_cuda=<GPU>, every pod taking every
// GPU of its node; bench run creates the far pair after the near one.
func gpudirectPairs(o Options) []runtime.Object {
	g := o.GPUDirect
	var objs []runtime.Object
	nearRun := ""
	for _, side := range []struct {
		scenario, suffix string
		nic              GPUDirectNIC
	}{{ScenarioGPUDirectNear, "gdr-near", g.Near}, {ScenarioGPUDirectFar, "gdr-far", g.Far}} {
		so := o
		so.Name = o.Name + "-" + side.suffix
		so.PerftestArgs = append([]string{"-d", side.nic.RDMA, "--use_cuda=" + strconv.Itoa(g.CUDAIndex)}, o.PerftestArgs...)
		svc, server, client := perftestPair(so, RDMA)
		run := name(so, RDMA, "perftest")
		for _, m := range []*metav1.ObjectMeta{&svc.ObjectMeta, &server.ObjectMeta, &client.ObjectMeta} {
			m.Labels[LabelRun], m.Labels[LabelTest], m.Labels[LabelScenario] = run, string(GPUDirectTest), side.scenario
			m.Labels[LabelGPUDirectClass] = side.nic.Class.String()
		}
		for _, pod := range []*corev1.Pod{server, client} {
			ct := &pod.Spec.Containers[0]
			ct.Resources = resources(o, g.GPUs)
			ct.Env = append(ct.Env, corev1.EnvVar{Name: "CUDA_DEVICE_ORDER", Value: "PCI_BUS_ID"})
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[annotationGPUDirect] = fmt.Sprintf("GPU %s (CUDA %d) with %s %s (%s)", g.GPU, g.CUDAIndex, side.nic.RDMA, side.nic.PCI, side.nic.Class)
			if nearRun != "" {
				pod.Annotations[AnnotationAfterRun] = nearRun
			}
		}
		nearRun = run
		objs = append(objs, withRails(o, svc, server, client)...)
	}
	return objs
}

// annotationGPUDirect says, on each GPUDirect pod, which GPU and NIC it
// measures and their class.
const annotationGPUDirect = "railyard.io/bench-gpudirect"

// validateGPUDirect checks the GPUDirect pair's inputs.
func validateGPUDirect(o Options) []error {
	var errs []error
	if o.GPUDirect == nil {
		return []error{errors.New("test gpudirect: needs the GPU and NICs chosen from the node's topology (--machine or --sysfs)")}
	}
	if len(o.Nodes) < 2 {
		errs = append(errs, fmt.Errorf("nodes: the gpudirect pairs need two node names, got %d", len(o.Nodes)))
	}
	if !slices.Contains(o.Variants, RDMA) {
		errs = append(errs, errors.New("test gpudirect: runs only in the rdma variant"))
	}
	for _, d := range []string{o.GPUDirect.Near.RDMA, o.GPUDirect.Far.RDMA} {
		if !rdmaName.MatchString(d) {
			errs = append(errs, fmt.Errorf("gpudirect: RDMA device %q: want a device name such as mlx5_0", d))
		}
	}
	if o.GPUDirect.GPUs < 1 || o.GPUDirect.CUDAIndex < 0 || o.GPUDirect.CUDAIndex >= o.GPUDirect.GPUs {
		errs = append(errs, fmt.Errorf("gpudirect: CUDA index %d of %d GPUs", o.GPUDirect.CUDAIndex, o.GPUDirect.GPUs))
	}
	return errs
}
