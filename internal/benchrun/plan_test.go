package benchrun

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
		{"mpijob", mpi, "MPIJobs need the MPI Operator"},
		{"deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n", "bench run creates only v1 Pods and Services"},
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
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Load(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, r := range p.Runs {
			if r.Result == nil || len(r.Pods) == 0 {
				t.Errorf("run %s accepted without a result pod", r.Name)
			}
		}
	})
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
