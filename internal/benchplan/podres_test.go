package benchplan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParsePodResources(t *testing.T) {
	t.Parallel()
	got, err := ParsePodResources("hugepages-1Gi=4Gi,cpu=6,memory=8Gi")
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{"hugepages-1Gi": resource.MustParse("4Gi"), corev1.ResourceCPU: resource.MustParse("6"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for in, wantErr := range map[string]string{
		"cpu":                 "want NAME=QUANTITY",
		"nvidia.com/gpu=1":    "want cpu, memory or hugepages-<size>",
		"cpu=-1":              "want a positive quantity",
		"memory=lots":         "want a positive quantity",
		"cpu=1,cpu=2":         "given twice",
		"":                    "want NAME=QUANTITY",
		"hugepages-2Mi=0":     "want a positive quantity",
		"cpu=6,,memory=8Gi":   "want NAME=QUANTITY",
		"ephemeral-storage=1": "want cpu, memory",
	} {
		if _, err := ParsePodResources(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: err = %v, want %q", in, err, wantErr)
		}
	}
}

func FuzzParsePodResources(f *testing.F) {
	for _, s := range []string{"hugepages-1Gi=4Gi,cpu=6,memory=8Gi", "cpu=500m", "memory=1e3", "=", ",", "cpu==1", "hugepages-=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParsePodResources(s)
		if err != nil {
			return
		}
		for k, q := range l {
			if k != corev1.ResourceCPU && k != corev1.ResourceMemory && !strings.HasPrefix(string(k), corev1.ResourceHugePagesPrefix) || q.Sign() <= 0 {
				t.Errorf("%q accepted %s=%s", s, k, q.String())
			}
		}
	})
}

// Every benchmark pod and MPI worker requests the pod resources equal to
// its limits (Guaranteed: what a Topology Manager pins), with hugepages
// mounted.
func TestPlanPodResources(t *testing.T) {
	t.Parallel()
	o := baseOptions()
	o.Tests = []Test{Perftest, NCCLTests}
	var err error
	if o.PodResources, err = ParsePodResources("hugepages-1Gi=4Gi,cpu=6,memory=8Gi"); err != nil {
		t.Fatal(err)
	}
	y := planYAML(t, o)
	p := parse(t, y)
	if len(p.pods) == 0 || len(p.jobs) == 0 {
		t.Fatalf("%d pods, %d jobs", len(p.pods), len(p.jobs))
	}
	check := func(what string, spec corev1.PodSpec) {
		c := spec.Containers[0]
		for _, k := range []corev1.ResourceName{"hugepages-1Gi", corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[k], c.Resources.Limits[k]
			if req.IsZero() || req.Cmp(lim) != 0 {
				t.Errorf("%s: %s request %s, limit %s", what, k, req.String(), lim.String())
			}
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == hugepagesVolume && m.MountPath == hugepagesMount
		}
		hp := false
		for _, v := range spec.Volumes {
			hp = hp || v.Name == hugepagesVolume && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumHugePages
		}
		if !mounted || !hp {
			t.Errorf("%s: hugepages volume mounted %v, declared %v", what, mounted, hp)
		}
	}
	for _, pod := range p.pods {
		check(pod.Name, pod.Spec)
	}
	for _, job := range p.jobs {
		worker, _ := template(t, job, "Worker")
		check("worker of "+job["metadata"].(map[string]any)["name"].(string), worker.Spec)
	}
}

// --bare-metal: a hostNetwork perftest pair on the same nodes, labelled
// bare-metal, reaching /dev/infiniband without a pool or a network.
func TestPlanBareMetal(t *testing.T) {
	t.Parallel()
	o := baseOptions()
	o.Tests, o.Variants, o.BareMetal = []Test{Perftest}, []Variant{RDMA}, true
	y := planYAML(t, o)
	p := parse(t, y)
	var names []string
	for _, pod := range p.pods {
		names = append(names, pod.Name)
		bm := pod.Labels[LabelScenario] == ScenarioBareMetal
		if bm != pod.Spec.HostNetwork || bm != strings.Contains(pod.Name, "-bm-") {
			t.Errorf("%s: scenario %q, hostNetwork %v", pod.Name, pod.Labels[LabelScenario], pod.Spec.HostNetwork)
		}
		if !bm {
			continue
		}
		if pod.Annotations[NetworksAnnotation] != "" || len(pod.Spec.Containers[0].Resources.Requests) != 0 ||
			pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet || pod.Spec.Volumes[0].HostPath == nil || pod.Spec.Volumes[0].HostPath.Path != "/dev/infiniband" {
			t.Errorf("bare-metal pod %s: %+v", pod.Name, pod.Spec)
		}
	}
	want := []string{"railyard-bench-perftest-server-rdma", "railyard-bench-perftest-client-rdma",
		"railyard-bench-bm-perftest-server-rdma", "railyard-bench-bm-perftest-client-rdma"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("pods (-want +got):\n%s", d)
	}
	o.Tests = []Test{NCCLTests}
	if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), "add the perftest test") {
		t.Errorf("bare metal without perftest: %v", err)
	}
}

// -R (rdma_cm) needs the server's address on the RDMA interface: refused
// without --server-address, planned with it.
func TestPlanRDMACM(t *testing.T) {
	t.Parallel()
	o := baseOptions()
	o.Tests, o.Variants, o.PerftestArgs = []Test{Perftest}, []Variant{RDMA}, []string{"-R", "-a", "--report_gbits"}
	if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), "give --server-address") {
		t.Errorf("-R without an address: %v", err)
	}
	o.ServerAddress = "192.168.111.10"
	y := planYAML(t, o)
	if !strings.Contains(string(y), `ib_write_bw -R -a --report_gbits "$RAILYARD_BENCH_SERVER_HOST"`) || !strings.Contains(string(y), "value: 192.168.111.10") {
		t.Errorf("client does not target the secondary-network address:\n%s", y)
	}
}
