package benchrun

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/railyard-io/railyard/internal/benchplan"
)

func planYAML(t *testing.T, o benchplan.Options) string {
	t.Helper()
	objs, err := benchplan.Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	y, err := benchplan.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// Load reads what bench plan prints: runs grouped by their label, servers
// before clients, the annotated client as the result.
func TestLoadBenchPlanOutput(t *testing.T) {
	y := planYAML(t, benchplan.Options{Image: "i", Nodes: []string{"a", "b"}, Tests: []benchplan.Test{benchplan.Perftest, benchplan.TCPProbe},
		Variants: []benchplan.Variant{benchplan.RDMA, benchplan.TCP}})
	p, err := Load(strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Runs {
		got = append(got, r.Name+" "+r.Test+" "+r.Variant+" "+r.Result.Name+" "+r.Pods[0].Name)
		if len(r.Services) != 1 || len(r.Pods) != 2 {
			t.Errorf("%s: %d services, %d pods", r.Name, len(r.Services), len(r.Pods))
		}
	}
	want := []string{
		"railyard-bench-perftest-rdma perftest rdma railyard-bench-perftest-client-rdma railyard-bench-perftest-server-rdma",
		"railyard-bench-perftest-tcp perftest tcp railyard-bench-perftest-client-tcp railyard-bench-perftest-server-tcp",
		"railyard-bench-probe-tcp probe tcp railyard-bench-probe-client-tcp railyard-bench-probe-server-tcp",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p.SetNamespace("bench")
	if p.Runs[2].Pods[1].Namespace != "bench" || p.Runs[2].Services[0].Namespace != "bench" {
		t.Error("SetNamespace did not move every object")
	}
}

func TestLoadRefuses(t *testing.T) {
	mpi := planYAML(t, benchplan.Options{Image: "i", Nodes: []string{"a", "b"}, Tests: []benchplan.Test{benchplan.NCCLTests}, GPUsPerNode: 1})
	probe := planYAML(t, benchplan.Options{Image: "i", Nodes: []string{"a", "b"}, Tests: []benchplan.Test{benchplan.TCPProbe},
		Variants: []benchplan.Variant{benchplan.TCP}})
	for _, tc := range []struct{ name, yaml, want string }{
		{"mpijob v1", strings.Replace(mpi, "kubeflow.org/v2beta1", "kubeflow.org/v1", 1), `apiVersion "kubeflow.org/v1": bench run creates kubeflow.org/v2beta1 MPIJobs`},
		{"mpijob without launcher", strings.Replace(mpi, "Launcher:", "Launcherz:", 1), "MPIJob railyard-bench-nccl-rdma: no spec.mpiReplicaSpecs.Launcher"},
		{"mpijob in a run of pods", strings.Replace(mpi, "labels:", "labels:\n    railyard.io/bench-run: railyard-bench-probe-tcp", 1) + "---\n" + probe,
			"run railyard-bench-probe-tcp: MPIJob railyard-bench-nccl-rdma shares its run with Pods or Services"},
		{"mpijob twice", mpi + "---\n" + mpi, "MPIJob/default/railyard-bench-nccl-rdma: listed twice"},
		{"deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", "bench run creates only v1 Pods and Services, resource.k8s.io/v1 ResourceClaimTemplates and kubeflow.org/v2beta1 MPIJobs"},
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containerz: []}\n", `unknown field "spec.containerz"`},
		{"no run label", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "Pod//x: no railyard.io/bench-run label"},
		{"no result pod", strings.ReplaceAll(probe, "railyard.io/bench-result", "x.io/other"), "no pod annotated railyard.io/bench-result=true"},
		{"missing server", strings.Replace(probe, "railyard.io/bench-server-pod: railyard-bench-probe-server-tcp", "railyard.io/bench-server-pod: gone", 1), "names server pod gone, not in the run"},
		{"twice", probe + "---\n" + probe, "listed twice"},
		{"empty", "", "no runs"},
		{"not yaml", "{{{", "plan document 1"},
	} {
		if _, err := Load(strings.NewReader(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzLoad: whatever file is given as a plan, Load returns a plan or an
// error, never panics; an accepted plan has a result pod in every run.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {railyard.io/bench-run: r}, annotations: {railyard.io/bench-result: \"true\"}}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n---\n---\n"))
	f.Add([]byte("apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: j}\nspec: {mpiReplicaSpecs: {Launcher: {replicas: 1}, Worker: {replicas: 2.5}}}\n"))
	f.Add([]byte("apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: j, labels: {railyard.io/bench-run: r}}\nspec: {mpiReplicaSpecs: {Launcher: {}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: x, labels: {railyard.io/bench-run: r}}\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Load(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, r := range p.Runs {
			if r.MPIJob != nil {
				if r.Result != nil || len(r.Pods) > 0 || len(r.Services) > 0 {
					t.Errorf("run %s: an MPIJob with pods or services", r.Name)
				}
				continue
			}
			if r.Result == nil || len(r.Pods) == 0 {
				t.Errorf("run %s accepted without a result pod", r.Name)
			}
		}
	})
}

// Load reads bench plan's MPIJobs (nccl-tests, OSU, Horovod): each a run
// of its own named after it, its test from its component label, its
// variant from its variant label, integers as the API machinery has them.
func TestLoadBenchPlanMPIJobs(t *testing.T) {
	y := planYAML(t, benchplan.Options{Image: "i", Nodes: []string{"a", "b"}, GPUsPerNode: 8, HorovodNodes: []int{2},
		Tests: []benchplan.Test{benchplan.NCCLTests, benchplan.OSU, benchplan.Horovod}, Variants: []benchplan.Variant{benchplan.RDMA, benchplan.TCP}})
	p, err := Load(strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Runs {
		if r.MPIJob == nil || r.Result != nil || len(r.Pods) != 0 || r.MPIJob.GetName() != r.Name {
			t.Errorf("run %s: %+v", r.Name, r)
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s %d", r.Name, r.Test, r.Variant, mpiWorkers(r.MPIJob)))
	}
	want := []string{
		"railyard-bench-hvd-n2-rdma horovod rdma 2", "railyard-bench-hvd-n2-tcp horovod tcp 2",
		"railyard-bench-nccl-rdma nccl rdma 2", "railyard-bench-nccl-tcp nccl tcp 2",
		"railyard-bench-osu-allreduce-rdma osu rdma 2", "railyard-bench-osu-allreduce-tcp osu tcp 2",
		"railyard-bench-osu-bw-rdma osu rdma 2", "railyard-bench-osu-bw-tcp osu tcp 2",
		"railyard-bench-osu-latency-rdma osu rdma 2", "railyard-bench-osu-latency-tcp osu tcp 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if slots, _, err := unstructured.NestedInt64(p.Runs[0].MPIJob.Object, "spec", "slotsPerWorker"); err != nil || slots != 8 {
		t.Errorf("slotsPerWorker %d: %v", slots, err)
	}
	p.SetNamespace("bench")
	if p.Runs[0].MPIJob.GetNamespace() != "bench" {
		t.Error("SetNamespace did not move the MPIJob")
	}
}

func TestLoadRefusesBadWaits(t *testing.T) {
	probe := planYAML(t, benchplan.Options{Image: "i", Nodes: []string{"a", "b"}, Tests: []benchplan.Test{benchplan.TCPProbe},
		Variants: []benchplan.Variant{benchplan.TCP, benchplan.TCPPodNetwork}})
	p, err := Load(strings.NewReader(probe))
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, r := range p.Runs {
		for _, s := range r.Services {
			objs = append(objs, s)
		}
		for _, pod := range r.Pods {
			objs = append(objs, pod)
		}
	}
	set := func(run, waitsFor string) {
		for _, o := range objs {
			if pod, ok := o.(*corev1.Pod); ok && pod.Labels[benchplan.LabelRun] == run {
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[benchplan.AnnotationAfterRun] = waitsFor
			}
		}
	}
	set("railyard-bench-probe-tcp", "gone")
	if _, err := FromObjects(objs); err == nil || !strings.Contains(err.Error(), "waits for run gone, not in the plan") {
		t.Errorf("err = %v", err)
	}
	set("railyard-bench-probe-tcp", "railyard-bench-probe-tcp-podnet")
	set("railyard-bench-probe-tcp-podnet", "railyard-bench-probe-tcp")
	if _, err := FromObjects(objs); err == nil || !strings.Contains(err.Error(), "in a cycle") {
		t.Errorf("err = %v", err)
	}
	set("railyard-bench-probe-tcp-podnet", "")
	p, err = FromObjects(objs)
	if err != nil || p.Runs[0].After != "railyard-bench-probe-tcp-podnet" {
		t.Errorf("%v %+v", err, p.Runs[0])
	}
}
