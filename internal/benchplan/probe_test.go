package benchplan

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPlanProbePair: the probe pair runs the railyard binary of the probe
// image (no shell), only in the TCP variants, with the labels and
// annotations bench run reads; the client reaches the server through
// EnvServerHost (Service name, or --server-address in the tcp variant).
func TestPlanProbePair(t *testing.T) {
	o := baseOptions()
	o.Tests = []Test{TCPProbe}
	o.Variants = []Variant{RDMA, TCP, TCPPodNetwork}
	o.ProbeImage = "ghcr.io/railyard-io/railyard:0.1.0"
	o.ProbeStreams, o.ProbeDuration = 2, "5s"
	y := planYAML(t, o)
	p := parse(t, y)
	if len(p.pods) != 4 || len(p.services) != 2 {
		t.Fatalf("%d pods, %d services, want 4 and 2 (tcp and tcp-podnet; no rdma probe)", len(p.pods), len(p.services))
	}
	byName := map[string]corev1.Pod{}
	for _, pod := range p.pods {
		byName[pod.Name] = pod
	}
	client, server := byName["railyard-bench-probe-client-tcp"], byName["railyard-bench-probe-server-tcp"]
	cc, sc := client.Spec.Containers[0], server.Spec.Containers[0]
	if want := []string{"railyard", "bench", "probe", "tcp", "--listen", ":5201", "--wait", "10m"}; !slices.Equal(sc.Command, want) {
		t.Errorf("server command %q, want %q", sc.Command, want)
	}
	if want := []string{"railyard", "bench", "probe", "tcp", "--connect", "$(RAILYARD_BENCH_SERVER_HOST)", "--port", "5201",
		"--streams", "2", "--duration", "5s", "--wait", "10m"}; !slices.Equal(cc.Command, want) {
		t.Errorf("client command %q, want %q", cc.Command, want)
	}
	if cc.Image != o.ProbeImage || len(cc.Env) != 1 || cc.Env[0].Value != "railyard-bench-probe-server-tcp" {
		t.Errorf("client image %s env %v", cc.Image, cc.Env)
	}
	if client.Annotations[AnnotationResult] != "true" || client.Annotations[AnnotationServerPod] != server.Name ||
		server.Annotations[AnnotationResult] != "" || client.Annotations[NetworksAnnotation] != DefaultNetwork {
		t.Errorf("annotations: client %v, server %v", client.Annotations, server.Annotations)
	}
	for _, pod := range []corev1.Pod{client, server} {
		if pod.Labels[LabelRun] != "railyard-bench-probe-tcp" || pod.Labels[LabelTest] != "probe" || pod.Labels[LabelVariant] != "tcp" {
			t.Errorf("%s labels %v", pod.Name, pod.Labels)
		}
		sec := pod.Spec.Containers[0].SecurityContext
		if *sec.Privileged || len(sec.Capabilities.Add) != 0 || !slices.Equal(sec.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s security context %+v", pod.Name, sec)
		}
	}
	if _, ok := client.Spec.Containers[0].Resources.Limits[DefaultResource]; !ok {
		t.Errorf("tcp client does not request the rail (it must get the secondary network)")
	}
	pn := byName["railyard-bench-probe-client-tcp-podnet"]
	if _, ok := pn.Spec.Containers[0].Resources.Limits[DefaultResource]; ok || pn.Annotations[NetworksAnnotation] != "" {
		t.Errorf("tcp-podnet client has a rail: %v %v", pn.Spec.Containers[0].Resources, pn.Annotations)
	}

	// A fixed secondary-network address replaces the Service name in the
	// tcp variant; bench run then has no server pod to wait for.
	o.ServerAddress = "192.168.100.10"
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Name == "railyard-bench-probe-client-tcp" {
			if pod.Spec.Containers[0].Env[0].Value != "192.168.100.10" || pod.Annotations[AnnotationServerPod] != "" {
				t.Errorf("with --server-address: env %v annotations %v", pod.Spec.Containers[0].Env, pod.Annotations)
			}
		}
	}
}

// The perftest pair carries the run labels and the result annotation too.
func TestPlanPerftestRunLabels(t *testing.T) {
	o := baseOptions()
	o.Tests, o.Variants = []Test{Perftest}, []Variant{RDMA}
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, obj := range objs {
		var labels, ann map[string]string
		switch v := obj.(type) {
		case *corev1.Pod:
			labels, ann = v.Labels, v.Annotations
		case *corev1.Service:
			labels = v.Labels
		}
		if labels[LabelRun] != "railyard-bench-perftest-rdma" || labels[LabelTest] != "perftest" {
			t.Errorf("%T labels %v", obj, labels)
		}
		if ann[AnnotationResult] == "true" {
			results++
		}
	}
	if results != 1 {
		t.Errorf("%d result pods, want 1 (the client)", results)
	}
}

func TestPlanProbeErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Variants = []Variant{RDMA} }, "the TCP probe runs only in the tcp and tcp-podnet variants"},
		{func(o *Options) { o.ProbeStreams = 500 }, "probe streams 500"},
		{func(o *Options) { o.ProbeDuration = "2h" }, `probe duration "2h"`},
		{func(o *Options) { o.ProbeDuration = "soon" }, `probe duration "soon"`},
		{func(o *Options) { o.Nodes = o.Nodes[:1] }, "the probe pair needs two node names"},
	} {
		o := baseOptions()
		o.Tests, o.Variants = []Test{TCPProbe}, []Variant{TCP}
		tc.mod(&o)
		if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}
