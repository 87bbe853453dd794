package benchplan

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// nccl-tests MPIJob. Pods and Services are typed; the MPIJob is
// unstructured. The e2e suite sends these to a kube-apiserver with a
// server-side dry run.
func Objects(opts Options) ([]runtime.Object, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("bench plan: %w", err)
	}
	var objs []runtime.Object
	for _, v := range o.Variants {
		for _, t := range o.Tests {
			switch t {
			case Perftest:
				svc, server, client := perftestPair(o, v)
				objs = append(objs, svc, server, client)
			case NCCLTests:
				job, err := mpiJob(o, v)
				if err != nil {
					return nil, err
				}
				objs = append(objs, job)
			}
		}
	}
	return objs, nil
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
	if addr == "" {
		addr = serverName
	}
	var serverCmd, clientCmd string
	switch v {
	case RDMA:
		words := append([]string{o.Perftest}, o.PerftestArgs...)
		serverCmd = "exec " + shellLine(words...)
		clientCmd = retry(shellLine(append(words, addr)...))
	case TCP:
		serverCmd = "exec iperf3 --server --one-off"
		clientCmd = retry("iperf3 --client " + shellWord(addr) + " --parallel 8 --time 30 --format g")
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
	return svc,
		pod(serverName, "perftest-server", o.Nodes[0], serverCmd),
		pod(clientName, "perftest-client", o.Nodes[1], clientCmd)
}

// retry runs cmd until it succeeds: the client may start before the server
// listens.
func retry(cmd string) string {
	return fmt.Sprintf("for i in $(seq 1 %d); do %s && exit 0; sleep %d; done; exit 1",
		connectAttempts, cmd, connectRetrySeconds)
}

// ncclEnv is the environment every rank gets. Open MPI does not pass a
// worker container's environment to ranks it starts over ssh, so the
// launcher forwards each variable with -x.
func ncclEnv(o Options, v Variant) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}}
	if v == TCP {
		env = append(env, corev1.EnvVar{Name: "NCCL_IB_DISABLE", Value: "1"})
		if ifnames := interfaces(o.Rails); len(ifnames) > 0 {
			env = append(env, corev1.EnvVar{Name: "NCCL_SOCKET_IFNAME", Value: strings.Join(ifnames, ",")})
		}
	}
	return append(env, o.NCCLEnv...)
}

func mpiJob(o Options, v Variant) (*unstructured.Unstructured, error) {
	env := ncclEnv(o, v)
	ranks := o.Workers * max(o.GPUsPerNode, 1)
	args := []string{"mpirun", "--allow-run-as-root", "-np", itoa(ranks), "-bind-to", "none", "-map-by", "slot"}
	for _, e := range env {
		args = append(args, "-x", e.Name)
	}
	args = append(args, o.NCCLTestsDir+"/"+o.NCCLTest)
	args = append(args, o.NCCLArgs...)

	launcher := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels(o, "nccl-launcher", v)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers: []corev1.Container{{
				Name:    "launcher",
				Image:   o.Image,
				Command: args,
				Env:     env,
			}},
		},
	}
	workerLabels := labels(o, "nccl-worker", v)
	worker := corev1.PodTemplateSpec{
		ObjectMeta: podMeta(o, "", "nccl-worker", v),
		Spec: corev1.PodSpec{
			Affinity: workerAffinity(o, workerLabels),
			Containers: []corev1.Container{{
				Name:            "worker",
				Image:           o.Image,
				Command:         []string{"/usr/sbin/sshd", "-De"},
				Env:             env,
				Resources:       resources(o, o.GPUsPerNode),
				SecurityContext: securityContext(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
			}},
			// NCCL moves intra-node data through /dev/shm; the container
			// default of 64 MiB is too small.
			Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(8<<30, resource.BinarySI)},
			}}},
		},
	}
	worker.Namespace = ""
	lt, err := toMap(&launcher)
	if err != nil {
		return nil, err
	}
	wt, err := toMap(&worker)
	if err != nil {
		return nil, err
	}
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": MPIJobAPIVersion,
		"kind":       MPIJobKind,
		"metadata": map[string]any{
			"name":      name(o, v, "nccl"),
			"namespace": o.Namespace,
			"labels":    stringMap(labels(o, "nccl", v)),
		},
		"spec": map[string]any{
			"slotsPerWorker":    int64(max(o.GPUsPerNode, 1)),
			"runPolicy":         map[string]any{"cleanPodPolicy": "Running"},
			"mpiImplementation": "OpenMPI",
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{"replicas": int64(1), "template": lt},
				"Worker":   map[string]any{"replicas": int64(o.Workers), "template": wt},
			},
		},
	}}
	return job, nil
}

// workerAffinity keeps workers on distinct nodes and, when nodes are named,
// on those nodes.
func workerAffinity(o Options, workerLabels map[string]string) *corev1.Affinity {
	a := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: workerLabels},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	if len(o.Nodes) > 0 {
		a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: append([]string(nil), o.Nodes...),
			}}}},
		}}
	}
	return a
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
