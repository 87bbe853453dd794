package benchplan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/railyard-io/railyard/internal/topology"
)

const testClass = "railyard.io-rail0"

// kindNames lists objects as Kind/name, in order.
func kindNames(t *testing.T, objs []runtime.Object) []string {
	t.Helper()
	var out []string
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, obj.GetObjectKind().GroupVersionKind().Kind+"/"+m.GetName())
	}
	return out
}

func wantTemplate(run string, labels map[string]string, reqs ...resourceapi.DeviceRequest) resourceapi.ResourceClaimTemplate {
	return resourceapi.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: ClaimTemplateName(run), Namespace: DefaultNamespace, Labels: labels},
		Spec: resourceapi.ResourceClaimTemplateSpec{
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}},
		},
	}
}

func railRequest(name, class string, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}}
}

// TestPlanDRARails is a mixed plan, one extended-resource rail and one DRA
// rail: each run that requests rails is preceded by its
// ResourceClaimTemplate, its pods (and MPIJob workers) claim it, and the
// DRA rail adds no extended resource; tcp-podnet, without rails, has no
// template.
func TestPlanDRARails(t *testing.T) {
	o := baseOptions()
	o.Variants = []Variant{RDMA, TCP, TCPPodNetwork}
	o.Tests = []Test{Perftest, TCPProbe, NCCLTests}
	o.Rails = []Rail{{Resource: "a.io/x", Network: "nx"}, {DeviceClass: testClass, Count: 2}}
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ResourceClaimTemplate/railyard-bench-perftest-rdma-rails",
		"Service/railyard-bench-perftest-server-rdma",
		"Pod/railyard-bench-perftest-server-rdma",
		"Pod/railyard-bench-perftest-client-rdma",
		"ResourceClaimTemplate/railyard-bench-nccl-rdma-rails",
		"MPIJob/railyard-bench-nccl-rdma",
		"ResourceClaimTemplate/railyard-bench-perftest-tcp-rails",
		"Service/railyard-bench-perftest-server-tcp",
		"Pod/railyard-bench-perftest-server-tcp",
		"Pod/railyard-bench-perftest-client-tcp",
		"ResourceClaimTemplate/railyard-bench-probe-tcp-rails",
		"Service/railyard-bench-probe-server-tcp",
		"Pod/railyard-bench-probe-server-tcp",
		"Pod/railyard-bench-probe-client-tcp",
		"ResourceClaimTemplate/railyard-bench-nccl-tcp-rails",
		"MPIJob/railyard-bench-nccl-tcp",
		"Service/railyard-bench-perftest-server-tcp-podnet",
		"Pod/railyard-bench-perftest-server-tcp-podnet",
		"Pod/railyard-bench-perftest-client-tcp-podnet",
		"Service/railyard-bench-probe-server-tcp-podnet",
		"Pod/railyard-bench-probe-server-tcp-podnet",
		"Pod/railyard-bench-probe-client-tcp-podnet",
		"MPIJob/railyard-bench-nccl-tcp-podnet",
	}
	if diff := cmp.Diff(want, kindNames(t, objs)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	data, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, data)
	req := railRequest("rail1", testClass, 2) // rail 1 of all rails
	labels := func(v Variant, run string, test Test) map[string]string {
		return map[string]string{labelApp: DefaultName, labelComponent: "rails", labelVariant: string(v), LabelRun: run, LabelTest: string(test)}
	}
	wantTemplates := []resourceapi.ResourceClaimTemplate{
		wantTemplate("railyard-bench-perftest-rdma", labels(RDMA, "railyard-bench-perftest-rdma", Perftest), req),
		wantTemplate("railyard-bench-nccl-rdma", labels(RDMA, "railyard-bench-nccl-rdma", NCCLTests), req),
		wantTemplate("railyard-bench-perftest-tcp", labels(TCP, "railyard-bench-perftest-tcp", Perftest), req),
		wantTemplate("railyard-bench-probe-tcp", labels(TCP, "railyard-bench-probe-tcp", TCPProbe), req),
		wantTemplate("railyard-bench-nccl-tcp", labels(TCP, "railyard-bench-nccl-tcp", NCCLTests), req),
	}
	if diff := cmp.Diff(wantTemplates, p.templates); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}

	claims := []corev1.ResourceClaim{{Name: RailsClaim}}
	checkRails := func(what string, v Variant, run string, spec corev1.PodSpec) {
		t.Helper()
		c := spec.Containers[0]
		if v == TCPPodNetwork {
			if spec.ResourceClaims != nil || c.Resources.Claims != nil {
				t.Errorf("%s: tcp-podnet claims rails: %v %v", what, spec.ResourceClaims, c.Resources.Claims)
			}
			return
		}
		tmpl := ClaimTemplateName(run)
		if diff := cmp.Diff([]corev1.PodResourceClaim{{Name: RailsClaim, ResourceClaimTemplateName: &tmpl}}, spec.ResourceClaims); diff != "" {
			t.Errorf("%s: resourceClaims (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff(claims, c.Resources.Claims); diff != "" {
			t.Errorf("%s: container claims (-want +got):\n%s", what, diff)
		}
		checkRequest(t, what, c, "a.io/x", 1)
		for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for k := range list {
				if k != "a.io/x" && k != DefaultGPUResource {
					t.Errorf("%s: requests %s, want a.io/x (and GPUs) alone: a DRA rail adds no extended resource", what, k)
				}
			}
		}
	}
	for _, pod := range p.pods {
		checkRails(pod.Name, Variant(pod.Labels[LabelVariant]), pod.Labels[LabelRun], pod.Spec)
		if v := Variant(pod.Labels[LabelVariant]); v != TCPPodNetwork && pod.Annotations[NetworksAnnotation] != "nx" {
			t.Errorf("%s: networks %q, want nx", pod.Name, pod.Annotations[NetworksAnnotation])
		}
	}
	for _, job := range p.jobs {
		md := job["metadata"].(map[string]any)
		jobName := md["name"].(string)
		v := Variant(md["labels"].(map[string]any)[labelVariant].(string))
		worker, _ := template(t, job, "Worker")
		checkRails(jobName+" worker", v, jobName, worker.Spec)
		launcher, _ := template(t, job, "Launcher")
		if launcher.Spec.ResourceClaims != nil || launcher.Spec.Containers[0].Resources.Claims != nil {
			t.Errorf("%s: the launcher claims rails", jobName)
		}
	}
}

// TestPlanDRAOnlyRails: DRA rails alone, with every OSU run and the
// gpudirect pairs: one template per run with one request per rail in rail
// order, no Multus annotation, no extended resource.
func TestPlanDRAOnlyRails(t *testing.T) {
	g, err := ChooseGPUDirect(model(t, "roce-8gpu-4nic"), "", topology.ClassUnknown)
	if err != nil {
		t.Fatal(err)
	}
	o := baseOptions()
	o.Variants = []Variant{RDMA}
	o.Tests = []Test{GPUDirectTest, OSU}
	o.GPUDirect = &g
	o.Rails = []Rail{{DeviceClass: "c0"}, {DeviceClass: "c1", Count: 3}}
	data := planYAML(t, o)
	if strings.Contains(string(data), NetworksAnnotation) {
		t.Error("DRA rails without networks got a networks annotation")
	}
	p := parse(t, data)
	var names []string
	for _, tmpl := range p.templates {
		names = append(names, tmpl.Name)
		if diff := cmp.Diff([]resourceapi.DeviceRequest{railRequest("rail0", "c0", 1), railRequest("rail1", "c1", 3)},
			tmpl.Spec.Spec.Devices.Requests); diff != "" {
			t.Errorf("%s: requests (-want +got):\n%s", tmpl.Name, diff)
		}
	}
	wantNames := []string{
		"railyard-bench-gdr-near-perftest-rdma-rails", "railyard-bench-gdr-far-perftest-rdma-rails",
		"railyard-bench-osu-latency-rdma-rails", "railyard-bench-osu-bw-rdma-rails", "railyard-bench-osu-allreduce-rdma-rails",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("templates (-want +got):\n%s", diff)
	}
	// A GPUDirect template carries its pods' labels (scenario, class).
	if l := p.templates[1].Labels; l[LabelScenario] != ScenarioGPUDirectFar || l[LabelTest] != string(GPUDirectTest) || l[labelComponent] != "rails" {
		t.Errorf("far template labels %v", l)
	}
	for _, pod := range p.pods {
		if _, ok := pod.Spec.Containers[0].Resources.Limits[DefaultResource]; ok {
			t.Errorf("%s: requests the default resource", pod.Name)
		}
		if len(pod.Spec.ResourceClaims) != 1 || *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName != ClaimTemplateName(pod.Labels[LabelRun]) {
			t.Errorf("%s: resourceClaims %v", pod.Name, pod.Spec.ResourceClaims)
		}
	}
}

func TestPlanDRARailErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rails []Rail
		want  []string
	}{
		"both set":       {[]Rail{{Resource: "a.io/x", DeviceClass: "c"}}, []string{`rail 0: resource "a.io/x" and device class "c": give one`}},
		"neither set":    {[]Rail{{Resource: "a.io/x"}, {Network: "n"}}, []string{"rail 1: no resource or device class"}},
		"bad class":      {[]Rail{{DeviceClass: "Rail_0"}}, []string{`device class "Rail_0": a lowercase RFC 1123 subdomain`}},
		"negative count": {[]Rail{{DeviceClass: "c", Count: -1}}, []string{`device class "c": count -1: counts must not be negative`}},
		"too many":       {[]Rail{{DeviceClass: "c", Count: 30}, {DeviceClass: "d", Count: 3}}, []string{"33 devices in one claim, the API allows 32"}},
		"every problem": {[]Rail{{DeviceClass: "A"}, {Resource: "a.io/x", DeviceClass: "c"}, {DeviceClass: "c", Count: -3, Network: "a,b"}},
			[]string{`device class "A"`, "rail 1:", "count -3", `network "a,b"`}},
	} {
		o := baseOptions()
		o.Rails = tc.rails
		_, err := Objects(o)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to mention %q", name, err, w)
			}
		}
	}
}
