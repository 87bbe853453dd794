package benchplan

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func jobsByName(t *testing.T, o Options) map[string]map[string]any {
	t.Helper()
	data := planYAML(t, o)
	out := map[string]map[string]any{}
	for _, j := range parse(t, data).jobs {
		out[j["metadata"].(map[string]any)["name"].(string)] = j
	}
	return out
}

func launcherCommand(t *testing.T, job map[string]any) string {
	t.Helper()
	l, _ := template(t, job, "Launcher")
	return strings.Join(l.Spec.Containers[0].Command, " ")
}

func TestPlanHorovodScalingRuns(t *testing.T) {
	o := baseOptions()
	o.Nodes = []string{"n1", "n2", "n3", "n4", "n5"}
	o.Tests = []Test{Horovod}
	jobs := jobsByName(t, o)
	// 1, 2, 4 nodes (8 is more than the 5 workers), rdma and tcp.
	if len(jobs) != 6 {
		t.Fatalf("jobs: %v", slices.Sorted(func(yield func(string) bool) {
			for k := range jobs {
				if !yield(k) {
					return
				}
			}
		}))
	}
	rdma, tcp := jobs["railyard-bench-hvd-n4-rdma"], jobs["railyard-bench-hvd-n4-tcp"]
	if rdma == nil || tcp == nil {
		t.Fatal("no 4-node jobs")
	}
	if got := launcherCommand(t, rdma); got != "mpirun --allow-run-as-root -np 32 -bind-to none -map-by slot -x NCCL_DEBUG -x HOROVOD_MPI_THREADS_DISABLE "+
		"python3 /horovod/examples/pytorch/pytorch_synthetic_benchmark.py --model resnet50 --batch-size 64" {
		t.Errorf("rdma launcher: %s", got)
	}
	if got := launcherCommand(t, tcp); !strings.Contains(got, "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include net1 -x NCCL_DEBUG -x HOROVOD_MPI_THREADS_DISABLE -x NCCL_IB_DISABLE -x NCCL_SOCKET_IFNAME python3") {
		t.Errorf("tcp launcher: %s", got)
	}
	w, replicas := template(t, tcp, "Worker")
	if replicas != 4 {
		t.Errorf("workers = %d", replicas)
	}
	c := w.Spec.Containers[0]
	checkContainerSecurity(t, "hvd worker", c)
	checkRequest(t, "hvd worker", c, DefaultGPUResource, 8)
	checkRequest(t, "hvd worker", c, DefaultResource, 1)
	if v, _ := envValue(c.Env, "NCCL_IB_DISABLE"); v != "1" {
		t.Errorf("tcp worker env %v", c.Env)
	}
	// Each job's workers repel only each other: the 1-, 2- and 4-node
	// jobs may share nodes.
	sel := w.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels
	if len(sel) != 1 || sel[labelJob] != "railyard-bench-hvd-n4-tcp" || w.Labels[labelJob] != "railyard-bench-hvd-n4-tcp" {
		t.Errorf("anti-affinity %v, labels %v", sel, w.Labels)
	}
	o.HorovodNodes = []int{3}
	if jobs := jobsByName(t, o); len(jobs) != 2 || jobs["railyard-bench-hvd-n3-rdma"] == nil {
		t.Errorf("--horovod-nodes 3: %d jobs", len(jobs))
	}
}

func TestPlanOSURuns(t *testing.T) {
	o := baseOptions()
	o.Nodes = []string{"a", "b", "c"}
	o.Tests = []Test{OSU}
	jobs := jobsByName(t, o)
	if len(jobs) != 6 {
		t.Fatalf("%d jobs", len(jobs))
	}
	lat := jobs["railyard-bench-osu-latency-rdma"]
	if got := launcherCommand(t, lat); got != "mpirun --allow-run-as-root -np 2 -bind-to none -map-by slot --mca pml ucx -x UCX_TLS "+
		DefaultOSUDir+"/pt2pt/osu_latency" {
		t.Errorf("osu latency: %s", got)
	}
	l, _ := template(t, lat, "Launcher")
	if v, _ := envValue(l.Spec.Containers[0].Env, "UCX_TLS"); v != "rc,sm,self" {
		t.Errorf("UCX_TLS = %q", v)
	}
	w, n := template(t, jobs["railyard-bench-osu-allreduce-tcp"], "Worker")
	if n != 3 || !strings.Contains(launcherCommand(t, jobs["railyard-bench-osu-allreduce-tcp"]), "-np 3 ") {
		t.Errorf("allreduce over %d workers", n)
	}
	if _, gpu := w.Spec.Containers[0].Resources.Limits[corev1.ResourceName(DefaultGPUResource)]; gpu {
		t.Error("OSU host-memory runs request GPUs")
	}
	if got := launcherCommand(t, jobs["railyard-bench-osu-bw-tcp"]); !strings.Contains(got, "--mca btl_tcp_if_include net1 "+DefaultOSUDir+"/pt2pt/osu_bw") {
		t.Errorf("osu bw tcp: %s", got)
	}
}

// The TCP baseline with the secondary network removed entirely: no
// annotation, no RDMA resource, eth0.
func TestPlanTCPPodNetworkVariant(t *testing.T) {
	o := baseOptions()
	o.Variants = []Variant{TCPPodNetwork}
	o.Tests = []Test{Perftest, NCCLTests, Horovod}
	o.ServerAddress = "10.56.0.2"
	data := planYAML(t, o)
	if strings.Contains(string(data), NetworksAnnotation) || strings.Contains(string(data), DefaultResource) {
		t.Errorf("pod-network variant attaches the secondary network:\n%s", data)
	}
	p := parse(t, data)
	for _, pod := range p.pods {
		if ct := pod.Spec.Containers[0]; strings.Contains(pod.Name, "client") && (!strings.Contains(ct.Command[2], `iperf3 --client "$RAILYARD_BENCH_SERVER_HOST" --parallel 8 --time 30 --json`) ||
			len(ct.Env) != 1 || ct.Env[0] != (corev1.EnvVar{Name: EnvServerHost, Value: "railyard-bench-perftest-server-tcp-podnet"})) {
			t.Errorf("client: %s, env %v", ct.Command[2], ct.Env)
		}
	}
	for _, job := range p.jobs {
		w, _ := template(t, job, "Worker")
		if v, _ := envValue(w.Spec.Containers[0].Env, "NCCL_SOCKET_IFNAME"); v != "eth0" {
			t.Errorf("%v: NCCL_SOCKET_IFNAME %q", job["metadata"], v)
		}
	}
}

func TestPlanNewTestsInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Options)
		want string
	}{
		"osu one node":     {func(o *Options) { o.Tests, o.Nodes = []Test{OSU}, []string{"a"} }, "OSU runs need two nodes"},
		"horovod too many": {func(o *Options) { o.Tests, o.HorovodNodes = []Test{Horovod}, []int{3} }, "horovod nodes: 3"},
		"horovod zero":     {func(o *Options) { o.Tests, o.HorovodNodes = []Test{Horovod}, []int{0} }, "horovod nodes: 0"},
		"relative script":  {func(o *Options) { o.Tests, o.HorovodScript = []Test{Horovod}, "bench.py; id" }, "absolute path"},
		"variant":          {func(o *Options) { o.Variants = []Variant{"udp"} }, "tcp-podnet"},
	} {
		o := baseOptions()
		tc.mod(&o)
		if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}
