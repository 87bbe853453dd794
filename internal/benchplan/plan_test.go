package benchplan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

func baseOptions() Options {
	return Options{
		Image: "registry.example/bench:1",
		Nodes: []string{"node-a", "node-b"},
	}
}

// parsed is the YAML stream decoded back with strict field checking, so a
// misspelled field fails the test.
type parsed struct {
	services  []corev1.Service
	pods      []corev1.Pod
	jobs      []map[string]any
	templates []resourceapi.ResourceClaimTemplate
}

// planYAML is o's plan as bench plan prints it.
func planYAML(t *testing.T, o Options) []byte {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	var p parsed
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatal(err)
		}
		switch head.Kind {
		case "Service":
			var s corev1.Service
			if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
				t.Fatalf("service: %v\n%s", err, doc)
			}
			p.services = append(p.services, s)
		case "Pod":
			var pod corev1.Pod
			if err := yaml.UnmarshalStrict([]byte(doc), &pod); err != nil {
				t.Fatalf("pod: %v\n%s", err, doc)
			}
			p.pods = append(p.pods, pod)
		case "ResourceClaimTemplate":
			if head.APIVersion != "resource.k8s.io/v1" {
				t.Errorf("ResourceClaimTemplate apiVersion %q", head.APIVersion)
			}
			var rct resourceapi.ResourceClaimTemplate
			if err := yaml.UnmarshalStrict([]byte(doc), &rct); err != nil {
				t.Fatalf("resource claim template: %v\n%s", err, doc)
			}
			p.templates = append(p.templates, rct)
		case MPIJobKind:
			if head.APIVersion != MPIJobAPIVersion {
				t.Errorf("MPIJob apiVersion %q", head.APIVersion)
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			p.jobs = append(p.jobs, m)
		default:
			t.Fatalf("unexpected kind %q in\n%s", head.Kind, doc)
		}
	}
	return p
}

// template decodes spec.mpiReplicaSpecs.<role>.template strictly into a
// typed PodTemplateSpec and returns it with the replica count.
func template(t *testing.T, job map[string]any, role string) (corev1.PodTemplateSpec, int64) {
	t.Helper()
	spec := job["spec"].(map[string]any)["mpiReplicaSpecs"].(map[string]any)[role].(map[string]any)
	raw, err := json.Marshal(spec["template"])
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var tmpl corev1.PodTemplateSpec
	if err := dec.Decode(&tmpl); err != nil {
		t.Fatalf("%s template: %v", role, err)
	}
	return tmpl, int64(spec["replicas"].(float64))
}

func envValue(env []corev1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func checkContainerSecurity(t *testing.T, what string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Add, "IPC_LOCK") {
		t.Errorf("%s: no IPC_LOCK: %+v", what, sc)
		return
	}
	if len(sc.Capabilities.Add) != 1 {
		t.Errorf("%s: extra capabilities %v", what, sc.Capabilities.Add)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", what)
	}
}

func checkRequest(t *testing.T, what string, c corev1.Container, res string, want int64) {
	t.Helper()
	for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		q, ok := list[corev1.ResourceName(res)]
		if !ok || !q.Equal(*resource.NewQuantity(want, resource.DecimalSI)) {
			t.Errorf("%s: %s = %v (present %v), want %d in requests and limits", what, res, q.String(), ok, want)
		}
	}
}

func TestPlanBothVariants(t *testing.T) {
	objs, err := Objects(baseOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 8 { // per variant: service, server, client, MPIJob
		t.Fatalf("%d objects", len(objs))
	}
	data, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("creationTimestamp")) || bytes.Contains(data, []byte("status: {}")) {
		t.Error("YAML carries converter noise")
	}
	p := parse(t, data)
	if len(p.services) != 2 || len(p.pods) != 4 || len(p.jobs) != 2 {
		t.Fatalf("services %d pods %d jobs %d", len(p.services), len(p.pods), len(p.jobs))
	}
	for _, pod := range p.pods {
		c := pod.Spec.Containers[0]
		checkContainerSecurity(t, pod.Name, c)
		checkRequest(t, pod.Name, c, DefaultResource, 1)
		if pod.Annotations[NetworksAnnotation] != "railyard-system/railyard-rdma" {
			t.Errorf("%s: annotations %v", pod.Name, pod.Annotations)
		}
		if pod.Namespace != "default" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: namespace %q restart %q", pod.Name, pod.Namespace, pod.Spec.RestartPolicy)
		}
	}
	byName := map[string]corev1.Pod{}
	for _, pod := range p.pods {
		byName[pod.Name] = pod
	}
	server, client := byName["railyard-bench-perftest-server-rdma"], byName["railyard-bench-perftest-client-rdma"]
	if server.Spec.NodeSelector[corev1.LabelHostname] != "node-a" || client.Spec.NodeSelector[corev1.LabelHostname] != "node-b" {
		t.Errorf("node selectors: server %v client %v", server.Spec.NodeSelector, client.Spec.NodeSelector)
	}
	if got := server.Spec.Containers[0].Command[2]; got != "exec ib_write_bw -a -F --report_gbits" {
		t.Errorf("server command %q", got)
	}
	// The client reaches its server by RAILYARD_BENCH_SERVER_HOST: the
	// Service name (cluster DNS) as planned, the server's address under
	// bench run (the server pod is named for it).
	if got := client.Spec.Containers[0].Command[2]; !strings.Contains(got, `ib_write_bw -a -F --report_gbits "$RAILYARD_BENCH_SERVER_HOST" && exit 0`) {
		t.Errorf("client command %q", got)
	}
	if env := client.Spec.Containers[0].Env; len(env) != 1 || env[0] != (corev1.EnvVar{Name: EnvServerHost, Value: "railyard-bench-perftest-server-rdma"}) ||
		client.Annotations[AnnotationServerPod] != "railyard-bench-perftest-server-rdma" {
		t.Errorf("client env %v, annotations %v", env, client.Annotations)
	}
	if tcp := byName["railyard-bench-perftest-client-tcp"]; !strings.Contains(tcp.Spec.Containers[0].Command[2], `iperf3 --client "$RAILYARD_BENCH_SERVER_HOST" --parallel 8 --time 30 --json`) ||
		tcp.Spec.Containers[0].Env[0].Value != "railyard-bench-perftest-server-tcp" {
		t.Errorf("tcp client command %q, env %v", tcp.Spec.Containers[0].Command, tcp.Spec.Containers[0].Env)
	}
	svc := p.services[0]
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector[labelComponent] != "perftest-server" || svc.Name != "railyard-bench-perftest-server-rdma" {
		t.Errorf("service %+v", svc)
	}

	for _, job := range p.jobs {
		jobName := job["metadata"].(map[string]any)["name"].(string)
		tcp := strings.HasSuffix(jobName, "-tcp")
		if spec := job["spec"].(map[string]any); spec["slotsPerWorker"].(float64) != 8 || spec["mpiImplementation"] != "OpenMPI" {
			t.Errorf("%s spec %v", jobName, spec)
		}
		worker, replicas := template(t, job, "Worker")
		if replicas != 2 {
			t.Errorf("%s: %d workers", jobName, replicas)
		}
		wc := worker.Spec.Containers[0]
		checkContainerSecurity(t, jobName+" worker", wc)
		checkRequest(t, jobName+" worker", wc, DefaultResource, 1)
		checkRequest(t, jobName+" worker", wc, DefaultGPUResource, 8)
		if worker.Annotations[NetworksAnnotation] != "railyard-system/railyard-rdma" {
			t.Errorf("%s worker annotations %v", jobName, worker.Annotations)
		}
		if aff := worker.Spec.Affinity; aff == nil || aff.PodAntiAffinity == nil || aff.NodeAffinity == nil ||
			!slices.Equal(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values, []string{"node-a", "node-b"}) {
			t.Errorf("%s worker affinity %+v", jobName, aff)
		}
		launcher, _ := template(t, job, "Launcher")
		lc := launcher.Spec.Containers[0]
		cmd := strings.Join(lc.Command, " ")
		if !strings.HasPrefix(cmd, "mpirun --allow-run-as-root -np 16 ") || !strings.HasSuffix(cmd, "/opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1") {
			t.Errorf("%s launcher command %q", jobName, cmd)
		}
		for _, env := range [][]corev1.EnvVar{wc.Env, lc.Env} {
			v, ok := envValue(env, "NCCL_IB_DISABLE")
			if tcp && (!ok || v != "1") {
				t.Errorf("%s: NCCL_IB_DISABLE = %q (set %v), want 1", jobName, v, ok)
			}
			if !tcp && ok {
				t.Errorf("%s: RDMA variant sets NCCL_IB_DISABLE=%q", jobName, v)
			}
			if ifname, _ := envValue(env, "NCCL_SOCKET_IFNAME"); tcp && ifname != "net1" {
				t.Errorf("%s: NCCL_SOCKET_IFNAME = %q", jobName, ifname)
			}
		}
		if tcp != strings.Contains(cmd, "-x NCCL_IB_DISABLE") {
			t.Errorf("%s: launcher forwarding of NCCL_IB_DISABLE wrong: %q", jobName, cmd)
		}
	}
}

func TestPlanOptions(t *testing.T) {
	o := baseOptions()
	o.Variants = []Variant{TCP}
	o.Tests = []Test{NCCLTests}
	o.Nodes = nil
	o.Workers = 4
	o.GPUsPerNode = 4
	o.Rails = []Rail{{Resource: "example.com/rdma_vf", Count: 4}}
	o.Namespace = "bench"
	o.NCCLEnv = []corev1.EnvVar{{Name: "NCCL_ALGO", Value: "Ring"}}
	data := planYAML(t, o)
	p := parse(t, data)
	if len(p.jobs) != 1 || len(p.pods) != 0 {
		t.Fatalf("jobs %d pods %d", len(p.jobs), len(p.pods))
	}
	worker, replicas := template(t, p.jobs[0], "Worker")
	wc := worker.Spec.Containers[0]
	checkRequest(t, "worker", wc, "example.com/rdma_vf", 4)
	checkRequest(t, "worker", wc, DefaultGPUResource, 4)
	if replicas != 4 || worker.Annotations != nil || worker.Spec.Affinity.NodeAffinity != nil {
		t.Errorf("replicas %d annotations %v node affinity %v", replicas, worker.Annotations, worker.Spec.Affinity.NodeAffinity)
	}
	if _, ok := envValue(wc.Env, "NCCL_SOCKET_IFNAME"); ok {
		t.Error("NCCL_SOCKET_IFNAME set without a secondary network")
	}
	if v, _ := envValue(wc.Env, "NCCL_ALGO"); v != "Ring" {
		t.Errorf("NCCL_ALGO = %q", v)
	}
	launcher, _ := template(t, p.jobs[0], "Launcher")
	if cmd := strings.Join(launcher.Spec.Containers[0].Command, " "); !strings.Contains(cmd, "-np 16 ") || !strings.Contains(cmd, "-x NCCL_ALGO") {
		t.Errorf("launcher %q", cmd)
	}
	if ns := p.jobs[0]["metadata"].(map[string]any)["namespace"]; ns != "bench" {
		t.Errorf("namespace %v", ns)
	}
}

func TestPlanServerAddressAndLatencyTest(t *testing.T) {
	o := baseOptions()
	o.Tests = []Test{Perftest}
	o.Variants = []Variant{RDMA}
	o.Perftest = "ib_write_lat"
	o.ServerAddress = "192.168.100.10"
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	client := objs[2].(*corev1.Pod)
	if got := client.Spec.Containers[0].Command[2]; !strings.Contains(got, `ib_write_lat -a -F "$RAILYARD_BENCH_SERVER_HOST" && exit 0`) {
		t.Errorf("client command %q (latency tests take no --report_gbits)", got)
	}
	// A fixed address is the client's as planned: bench run keeps it.
	if env := client.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "192.168.100.10" || client.Annotations[AnnotationServerPod] != "" {
		t.Errorf("client env %v, annotations %v", env, client.Annotations)
	}
}

func TestPlanInvalidOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Options)
		want string
	}{
		"no image":         {func(o *Options) { o.Image = "" }, "image: required"},
		"one node":         {func(o *Options) { o.Nodes = []string{"a"} }, "perftest pair needs two node names"},
		"bad variant":      {func(o *Options) { o.Variants = []Variant{"udp"} }, `variant "udp"`},
		"negative iperf":   {func(o *Options) { o.IperfSeconds = -1 }, "iperf seconds -1: want 1 to 3600"},
		"long iperf":       {func(o *Options) { o.IperfSeconds = 3601 }, "iperf seconds 3601: want 1 to 3600"},
		"too many workers": {func(o *Options) { o.Workers = 3 }, "3 workers on 2 nodes"},
		"bad resource":     {func(o *Options) { o.Rails = []Rail{{Resource: "not a name!"}} }, `resource "not a name!"`},
		"resource twice": {func(o *Options) {
			o.Rails = []Rail{{Resource: "a.io/x", Network: "n1"}, {Resource: "a.io/x", Network: "n2"}}
		}, `resource "a.io/x": given twice`},
		"bad network":       {func(o *Options) { o.Rails = []Rail{{Resource: "a.io/x", Network: "a,b"}} }, `network "a,b"`},
		"bad ifname":        {func(o *Options) { o.Rails = []Rail{{Resource: "a.io/x", Network: "ns/n@"}} }, "interface name"},
		"negative count":    {func(o *Options) { o.Rails = []Rail{{Resource: "a.io/x", Count: -2}} }, "must not be negative"},
		"bad name":          {func(o *Options) { o.Name = "Bench_1" }, "name"},
		"bad perftest":      {func(o *Options) { o.Perftest = "iperf" }, "want an ib_* binary"},
		"negative gpus":     {func(o *Options) { o.GPUsPerNode = -1 }, "must not be negative"},
		"bad test":          {func(o *Options) { o.Tests = []Test{"hpl"} }, `test "hpl"`},
		"nccl test as path": {func(o *Options) { o.NCCLTest = "/bin/sh" }, "binary name"},
		// Image references and resource names that must never reach a
		// pod spec.
		"image with a space":         {func(o *Options) { o.Image = "ghcr.io/a/b:1 --privileged" }, `image: "ghcr.io/a/b:1 --privileged": not an image reference`},
		"image with $(id)":           {func(o *Options) { o.Image = "ghcr.io/a/$(id):1" }, "not an image reference"},
		"image with a newline":       {func(o *Options) { o.Image = "ghcr.io/a/b:1\nx" }, "not an image reference"},
		"probe image with a space":   {func(o *Options) { o.ProbeImage = "a b" }, `probe image: "a b": not an image reference`},
		"kubernetes.io resource":     {func(o *Options) { o.Rails = []Rail{{Resource: "kubernetes.io/rdma"}} }, `resource "kubernetes.io/rdma": the kubernetes.io domain`},
		"sub.kubernetes.io resource": {func(o *Options) { o.Rails = []Rail{{Resource: "node.kubernetes.io/x"}} }, "the kubernetes.io domain"},
		"resource without domain":    {func(o *Options) { o.Rails = []Rail{{Resource: "rdma"}} }, `resource "rdma": want an extended resource`},
		"requests. resource":         {func(o *Options) { o.Rails = []Rail{{Resource: "requests.a.io/x"}} }, `does not start with "requests."`},
		"kubernetes.io gpu":          {func(o *Options) { o.GPUResource = "kubernetes.io/gpu" }, `gpu resource "kubernetes.io/gpu"`},
	} {
		o := baseOptions()
		tc.mod(&o)
		if _, err := Objects(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", name, err, tc.want)
		}
	}
}
