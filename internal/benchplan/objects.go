package benchplan

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// MPIJob API of the Kubeflow MPI Operator (v2beta1). No Go types for it are
// vendored here, so the MPIJob is built as an unstructured object with these
// fields:
//
//	apiVersion: kubeflow.org/v2beta1
//	kind: MPIJob
//	spec.slotsPerWorker            ranks per worker pod (GPUs per node)
//	spec.runPolicy.cleanPodPolicy  Running: delete workers when the launcher ends
//	spec.mpiImplementation         OpenMPI
//	spec.mpiReplicaSpecs.Launcher  {replicas: 1, template: PodTemplateSpec}
//	spec.mpiReplicaSpecs.Worker    {replicas: N, template: PodTemplateSpec}
//
// The pod templates are typed corev1.PodTemplateSpec values converted to
// maps, so their field names are exactly the API's.
const (
	MPIJobAPIVersion = "kubeflow.org/v2beta1"
	MPIJobKind       = "MPIJob"
)

// Objects returns every object of the plan, in apply order: for each
// variant the perftest server Service, server Pod and client Pod, then the
// nccl-tests MPIJob, each run preceded by its ResourceClaimTemplate when a
// rail is delivered by DRA. Pods, Services and templates are typed; the
// MPIJob is unstructured. The e2e suite sends these to a kube-apiserver with a
// server-side dry run.
func Objects(opts Options) ([]runtime.Object, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bench plan: %w", err)
	}
	var objs []runtime.Object
	for _, v := range o.Variants {
		ov := o
		if v == TCPPodNetwork {
			ov.Rails = nil // no secondary network, no RDMA device
		}
		for _, t := range o.Tests {
			var runs []mpiRun
			switch t {
			case Perftest:
				svc, server, client := perftestPair(ov, v)
				objs = append(objs, withRails(ov, svc, server, client)...)
				if o.BareMetal && v == RDMA {
					objs = append(objs, bareMetalPair(o)...)
				}
			case GPUDirectTest:
				if v == RDMA {
					objs = append(objs, gpudirectPairs(ov)...)
				}
			case TCPProbe:
				if v == RDMA {
					continue // a TCP measurement has no RDMA variant
				}
				svc, server, client := probePair(ov, v)
				objs = append(objs, withRails(ov, svc, server, client)...)
			case NCCLTests:
				runs = []mpiRun{ncclRun(ov, v)}
			case OSU:
				runs = osuRuns(ov, v)
			case Horovod:
				runs = horovodRuns(ov, v)
			}
			for _, r := range runs {
				job, err := mpiJob(ov, v, r)
				if err != nil {
					return nil, err
				}
				objs = append(objs, job...)
			}
		}
	}
	return withPodResources(o, objs), nil
}

func name(o Options, v Variant, parts ...string) string {
	return strings.Join(append([]string{o.Name}, append(parts, string(v))...), "-")
}

// perftestPair is a headless Service in front of the server pod (so the
// client can reach it by name for perftest's TCP exchange) and the two pods,
// pinned to Nodes[0] and Nodes[1].
func perftestPair(o Options, v Variant) (*corev1.Service, *corev1.Pod, *corev1.Pod) {
	serverName := name(o, v, "perftest", "server")
	clientName := name(o, v, "perftest", "client")
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: serverName, Namespace: o.Namespace, Labels: labels(o, "perftest-server", v)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  labels(o, "perftest-server", v),
			Ports: []corev1.ServicePort{
				{Name: "perftest", Port: perftestPort, TargetPort: intstr.FromInt32(perftestPort), Protocol: corev1.ProtocolTCP},
				{Name: "iperf3", Port: iperfPort, TargetPort: intstr.FromInt32(iperfPort), Protocol: corev1.ProtocolTCP},
			},
			PublishNotReadyAddresses: true,
		},
	}
	addr := o.ServerAddress
	if addr == "" || v == TCPPodNetwork {
		addr = serverName // tcp-podnet: the pod network, whatever --server-address says
	}
	// The client reaches the server through EnvServerHost: the Service
	// name (cluster DNS) or --server-address as planned; bench run sets it
	// to the server's address (on its secondary network when known) when
	// it names the Service, so a run needs no cluster DNS.
	host := `"$` + EnvServerHost + `"`
	var serverCmd, clientCmd string
	switch v {
	case RDMA:
		words := append([]string{o.Perftest}, o.PerftestArgs...)
		serverCmd = "exec " + shellLine(words...)
		clientCmd = retry(shellLine(words...) + " " + host)
	case TCP, TCPPodNetwork:
		serverCmd = "exec iperf3 --server --one-off"
		// --json for bench parse; only the successful attempt's output is
		// printed (every failed attempt would print a JSON object too).
		clientCmd = fmt.Sprintf("for i in $(seq 1 %d); do iperf3 --client %s --parallel 8 --time %d --json > /tmp/iperf3.json && "+
			"cat /tmp/iperf3.json && exit 0; sleep %d; done; cat /tmp/iperf3.json; exit 1",
			connectAttempts, host, o.IperfSeconds, connectRetrySeconds)
	}
	pod := func(podName, component, node, cmd string) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: podMeta(o, podName, component, v),
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				NodeSelector:  map[string]string{corev1.LabelHostname: node},
				Containers: []corev1.Container{{
					Name:            "bench",
					Image:           o.Image,
					Command:         []string{"sh", "-c", cmd},
					Resources:       resources(o, 0),
					SecurityContext: securityContext(),
				}},
			},
		}
	}
	server, client := pod(serverName, "perftest-server", o.Nodes[0], serverCmd), pod(clientName, "perftest-client", o.Nodes[1], clientCmd)
	client.Spec.Containers[0].Env = []corev1.EnvVar{{Name: EnvServerHost, Value: addr}}
	run := name(o, v, "perftest")
	for _, m := range []*metav1.ObjectMeta{&svc.ObjectMeta, &server.ObjectMeta, &client.ObjectMeta} {
		m.Labels[LabelRun], m.Labels[LabelTest] = run, string(Perftest)
	}
	markResult(client, serverName, addr == serverName)
	return svc, server, client
}

// retry runs cmd until it succeeds: the client may start before the server
// listens.
func retry(cmd string) string {
	return fmt.Sprintf("for i in $(seq 1 %d); do %s && exit 0; sleep %d; done; exit 1",
		connectAttempts, cmd, connectRetrySeconds)
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// toMap converts a typed object to its JSON map, without the null
// creationTimestamp and the status the converter adds.
func toMap(obj any) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	clean(m)
	return m, nil
}

func clean(m map[string]any) {
	if md, ok := m["metadata"].(map[string]any); ok {
		if ts, ok := md["creationTimestamp"]; ok && ts == nil {
			delete(md, "creationTimestamp")
		}
		if len(md) == 0 {
			delete(m, "metadata")
		}
	}
	delete(m, "status") // objects to create carry no status
}

// ToUnstructured converts every object for a dynamic client.
func ToUnstructured(objs []runtime.Object) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			out = append(out, u)
			continue
		}
		m, err := toMap(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// YAML renders objects as one multi-document YAML stream.
func YAML(objs []runtime.Object) ([]byte, error) {
	us, err := ToUnstructured(objs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, u := range us {
		if i > 0 {
			buf.WriteString("---\n")
		}
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("yaml %s/%s: %w", u.GetKind(), u.GetName(), err)
		}
		buf.Write(y)
	}
	return buf.Bytes(), nil
}
