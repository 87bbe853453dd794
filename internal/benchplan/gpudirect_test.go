package benchplan

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

func model(t *testing.T, name string) *topology.Topology {
	t.Helper()
	topo, err := machines.Topology(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// ChooseGPUDirect on the built-in models: the rail NIC and the farthest
// NIC of the same link layer, from Railyard's topology model.
func TestChooseGPUDirect(t *testing.T) {
	for _, tc := range []struct {
		machine, gpu        string
		wantGPU             string
		wantIdx             int
		near, far           string
		nearClass, farClass topology.Class
	}{
		// roce-8gpu-4nic: GPU0 is PIX to mlx5_0, SYS to mlx5_2 and mlx5_3
		// (the first in PCI order wins the tie).
		{"roce-8gpu-4nic", "", "0000:06:00.0", 0, "mlx5_0", "mlx5_2", topology.PIX, topology.SYS},
		{"roce-8gpu-4nic", "5", "0000:86:00.0", 5, "mlx5_2", "mlx5_0", topology.PIX, topology.SYS},
		{"roce-8gpu-4nic", "0000:0b:00.0", "0000:0b:00.0", 3, "mlx5_1", "mlx5_2", topology.PIX, topology.SYS},
		{"roce-8gpu-4nic", "0b:00.0", "0000:0b:00.0", 3, "mlx5_1", "mlx5_2", topology.PIX, topology.SYS},
	} {
		g, err := ChooseGPUDirect(model(t, tc.machine), tc.gpu, topology.ClassUnknown)
		if err != nil {
			t.Errorf("%s %q: %v", tc.machine, tc.gpu, err)
			continue
		}
		if g.GPU != tc.wantGPU || g.CUDAIndex != tc.wantIdx || g.GPUs != 8 || g.Near.RDMA != tc.near || g.Far.RDMA != tc.far ||
			g.Near.Class != tc.nearClass || g.Far.Class != tc.farClass {
			t.Errorf("%s %q: %+v", tc.machine, tc.gpu, g)
		}
	}
	// On DGX H100 every GPU has a PIX rail; the far NIC is an NDR HCA
	// across the sockets, never the slower storage or Ethernet ports.
	g, err := ChooseGPUDirect(model(t, "dgx-h100"), "", topology.ClassUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if g.Near.Class != topology.PIX || g.Far.Class != topology.SYS || g.CUDAIndex != 0 {
		t.Errorf("dgx-h100: %+v", g)
	}
	topo := model(t, "dgx-h100")
	near, _ := topo.NIC(g.Near.PCI)
	far, _ := topo.NIC(g.Far.PCI)
	if rate(near) != rate(far) || near.LinkLayer != far.LinkLayer {
		t.Errorf("dgx-h100: far NIC %s (%v %s) unlike the rail %s (%v %s)", far.RDMA, rate(far), far.LinkLayer, near.RDMA, rate(near), near.LinkLayer)
	}
	for _, tc := range []struct{ machine, gpu, want string }{
		{"roce-8gpu-4nic", "8", "the topology has GPUs 0 to 7"},
		{"roce-8gpu-4nic", "0000:99:00.0", "GPU 0000:99:00.0 is not in the topology"},
		{"roce-8gpu-4nic", "gpu0", "want an index or a PCI address"},
		{"vsphere-pvrdma", "", "the pair needs a GPU and two NICs"},
	} {
		if _, err := ChooseGPUDirect(model(t, tc.machine), tc.gpu, topology.ClassUnknown); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: err = %v, want %q", tc.machine, tc.gpu, err, tc.want)
		}
	}
}

// The GPUDirect plan: two perftest pairs, the same GPU with the rail NIC
// and with the far NIC, every pod taking every GPU (CUDA indices in PCI
// order), the far pair after the near one, labelled with its scenario.
func TestPlanGPUDirectPairs(t *testing.T) {
	g, err := ChooseGPUDirect(model(t, "roce-8gpu-4nic"), "", topology.ClassUnknown)
	if err != nil {
		t.Fatal(err)
	}
	o := baseOptions()
	o.Tests, o.Variants, o.GPUDirect = []Test{GPUDirectTest}, []Variant{RDMA, TCP}, &g
	y := planYAML(t, o)
	p := parse(t, y)
	if len(p.pods) != 4 || len(p.services) != 2 {
		t.Fatalf("%d pods, %d services, want 4 and 2 (near and far; no tcp variant)", len(p.pods), len(p.services))
	}
	byName := map[string]corev1.Pod{}
	for _, pod := range p.pods {
		byName[pod.Name] = pod
	}
	for _, tc := range []struct{ pod, cmd, scenario, after string }{
		{"railyard-bench-gdr-near-perftest-server-rdma", "exec ib_write_bw -d mlx5_0 --use_cuda=0 -a -F --report_gbits", "gpudirect-near", ""},
		{"railyard-bench-gdr-near-perftest-client-rdma", "ib_write_bw -d mlx5_0 --use_cuda=0 -a -F --report_gbits \"$RAILYARD_BENCH_SERVER_HOST\"", "gpudirect-near", ""},
		{"railyard-bench-gdr-far-perftest-server-rdma", "exec ib_write_bw -d mlx5_2 --use_cuda=0 -a -F --report_gbits", "gpudirect-far", "railyard-bench-gdr-near-perftest-rdma"},
		{"railyard-bench-gdr-far-perftest-client-rdma", "ib_write_bw -d mlx5_2 --use_cuda=0 -a -F --report_gbits \"$RAILYARD_BENCH_SERVER_HOST\"", "gpudirect-far", "railyard-bench-gdr-near-perftest-rdma"},
	} {
		pod, ok := byName[tc.pod]
		if !ok {
			t.Errorf("no pod %s", tc.pod)
			continue
		}
		ct := pod.Spec.Containers[0]
		if !strings.Contains(ct.Command[2], tc.cmd) {
			t.Errorf("%s: command %q lacks %q", tc.pod, ct.Command[2], tc.cmd)
		}
		if server := strings.Replace(tc.pod, "-client-", "-server-", 1); server != tc.pod &&
			(!slices.Contains(ct.Env, corev1.EnvVar{Name: EnvServerHost, Value: server}) || pod.Annotations[AnnotationServerPod] != server) {
			t.Errorf("%s: env %v, annotations %v: want %s=%s and the server pod named for bench run", tc.pod, ct.Env, pod.Annotations, EnvServerHost, server)
		}
		if q := ct.Resources.Limits[DefaultGPUResource]; q.Value() != 8 || !slices.Contains(ct.Env, corev1.EnvVar{Name: "CUDA_DEVICE_ORDER", Value: "PCI_BUS_ID"}) {
			t.Errorf("%s: GPUs %v env %v", tc.pod, ct.Resources.Limits, ct.Env)
		}
		if pod.Labels[LabelScenario] != tc.scenario || pod.Labels[LabelTest] != "gpudirect" || pod.Annotations[AnnotationAfterRun] != tc.after {
			t.Errorf("%s: labels %v annotations %v", tc.pod, pod.Labels, pod.Annotations)
		}
	}
	if a := byName["railyard-bench-gdr-far-perftest-client-rdma"].Annotations[annotationGPUDirect]; a != "GPU 0000:06:00.0 (CUDA 0) with mlx5_2 0000:84:00.0 (SYS)" {
		t.Errorf("annotation %q", a)
	}
	// Without a topology, or without the rdma variant, no plan.
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.GPUDirect = nil }, "needs the GPU and NICs chosen from the node's topology"},
		{func(o *Options) { o.Variants = []Variant{TCP} }, "runs only in the rdma variant"},
		{func(o *Options) { d := g; d.Far.RDMA = "mlx5_0; id"; o.GPUDirect = &d }, `RDMA device "mlx5_0; id"`},
	} {
		o := baseOptions()
		o.Tests, o.Variants, o.GPUDirect = []Test{GPUDirectTest}, []Variant{RDMA}, &g
		tc.mod(&o)
		if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// The published case is the NIC under the other PCIe switch of the same
// socket (PHB), not the farthest (SYS): the far class picks it.
func TestChooseGPUDirectFarClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		machine  string
		class    topology.Class
		far      string
		farClass topology.Class
	}{
		{"roce-8gpu-4nic", topology.PHB, "mlx5_1", topology.PHB},
		{"roce-8gpu-4nic", topology.SYS, "mlx5_2", topology.SYS},
		{"roce-8gpu-4nic", topology.ClassUnknown, "mlx5_2", topology.SYS},
		{"dgx1-v100", topology.PHB, "mlx5_1", topology.PHB},
		{"dgx-h100", topology.NODE, "mlx5_3", topology.NODE}, // mlx5_1 is NODE too, at another rate than the rail
	} {
		g, err := ChooseGPUDirect(model(t, tc.machine), "", tc.class)
		if err != nil {
			t.Errorf("%s %s: %v", tc.machine, tc.class, err)
			continue
		}
		if g.Far.RDMA != tc.far || g.Far.Class != tc.farClass || g.Near.Class != topology.PIX {
			t.Errorf("%s %s: near %+v far %+v, want far %s (%s)", tc.machine, tc.class, g.Near, g.Far, tc.far, tc.farClass)
		}
	}
	_, err := ChooseGPUDirect(model(t, "dgx-h100"), "", topology.PHB)
	if err == nil || !strings.Contains(err.Error(), "no healthy InfiniBand NIC of class PHB") || !strings.Contains(err.Error(), "mlx5_1 NODE") {
		t.Errorf("dgx-h100 PHB: err = %v", err)
	}
}
