package benchplan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/railyard-io/railyard/internal/benchprobe"
)

// What `railyard bench run` reads from a plan's objects (kubectl apply
// ignores them).
const (
	// LabelRun names the run an object belongs to, on every object of a
	// pod pair: bench run groups objects by it and deletes them together.
	LabelRun = "railyard.io/bench-run"
	// LabelVariant is the run's variant (rdma, tcp, tcp-podnet): bench
	// run's scenario in the report.
	LabelVariant = labelVariant
	// LabelTest is the run's test (perftest, probe).
	LabelTest = "railyard.io/bench-test"
	// AnnotationResult marks the pod whose log is the run's result (the
	// client of a pair).
	AnnotationResult = "railyard.io/bench-result"
	// AnnotationServerPod, on a client pod, names the server pod it
	// connects to. bench run creates that client only once the server pod
	// has an IP and sets EnvServerHost to it, so a run needs no cluster
	// DNS; applied with kubectl, EnvServerHost keeps the server's Service
	// name.
	AnnotationServerPod = "railyard.io/bench-server-pod"
	// EnvServerHost is the client's server host (a Service name, a pod IP
	// or --server-address).
	EnvServerHost = "RAILYARD_BENCH_SERVER_HOST"
)

// TCPProbe is Railyard's own TCP bandwidth probe between two pods
// (railyard bench probe tcp): a TCP measurement, planned only for the TCP
// variants, that needs nothing but the railyard image.
const TCPProbe Test = "probe"

// Probe defaults.
const (
	DefaultProbeStreams  = 4
	DefaultProbeDuration = "10s"
	probePort            = 5201
	probeWait            = "10m" // how long either side waits for the other
)

// probePair is a headless Service and the probe's server and client pods,
// pinned to Nodes[0] and Nodes[1], running the railyard binary of
// ProbeImage.
func probePair(o Options, v Variant) (*corev1.Service, *corev1.Pod, *corev1.Pod) {
	run := name(o, v, "probe")
	serverName := name(o, v, "probe", "server")
	clientName := name(o, v, "probe", "client")
	host := serverName
	if o.ServerAddress != "" && v == TCP {
		host = o.ServerAddress // a fixed secondary-network address
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: serverName, Namespace: o.Namespace, Labels: runLabels(o, "probe-server", v, run, TCPProbe)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  labels(o, "probe-server", v),
			Ports: []corev1.ServicePort{
				{Name: "probe", Port: probePort, TargetPort: intstr.FromInt32(probePort), Protocol: corev1.ProtocolTCP},
			},
			PublishNotReadyAddresses: true,
		},
	}
	pod := func(podName, component, node string, args []string, env []corev1.EnvVar) *corev1.Pod {
		m := podMeta(o, podName, component, v)
		m.Labels = runLabels(o, component, v, run, TCPProbe)
		grace := int64(1)
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: m,
			Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyNever,
				NodeSelector:                  map[string]string{corev1.LabelHostname: node},
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{
					Name:  "probe",
					Image: o.ProbeImage,
					// The railyard image has no shell: the probe is the
					// command, and the client retries by itself.
					Command:         append([]string{"railyard", "bench", "probe", "tcp"}, args...),
					Env:             env,
					Ports:           []corev1.ContainerPort{{Name: "probe", ContainerPort: probePort, Protocol: corev1.ProtocolTCP}},
					Resources:       resources(o, 0),
					SecurityContext: probeSecurityContext(),
				}},
			},
		}
	}
	port := strconv.Itoa(probePort)
	server := pod(serverName, "probe-server", o.Nodes[0], []string{"--listen", ":" + port, "--wait", probeWait}, nil)
	client := pod(clientName, "probe-client", o.Nodes[1], []string{
		"--connect", "$(" + EnvServerHost + ")", "--port", port,
		"--streams", strconv.Itoa(o.ProbeStreams), "--duration", o.ProbeDuration, "--wait", probeWait,
	}, []corev1.EnvVar{{Name: EnvServerHost, Value: host}})
	client.Spec.Containers[0].Ports = nil
	markResult(client, serverName, host == serverName)
	return svc, server, client
}

// probeSecurityContext: the probe needs no capability at all (plain TCP),
// not even the IPC_LOCK RDMA runs add.
func probeSecurityContext() *corev1.SecurityContext {
	f := false
	return &corev1.SecurityContext{
		Privileged:               &f,
		AllowPrivilegeEscalation: &f,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func runLabels(o Options, component string, v Variant, run string, t Test) map[string]string {
	l := labels(o, component, v)
	l[LabelRun] = run
	l[LabelTest] = string(t)
	return l
}

// markResult annotates the client pod as the run's result and, when it
// reaches the server by the server pod's name, names that pod for bench run.
func markResult(client *corev1.Pod, serverPod string, byServerName bool) {
	if client.Annotations == nil {
		client.Annotations = map[string]string{}
	}
	client.Annotations[AnnotationResult] = "true"
	if byServerName {
		client.Annotations[AnnotationServerPod] = serverPod
	}
}

// validateProbe checks the probe's settings: a pair of nodes, a TCP
// variant to run in, streams and a duration the probe accepts.
func validateProbe(o Options) []error {
	var errs []error
	if len(o.Nodes) < 2 {
		errs = append(errs, fmt.Errorf("nodes: the probe pair needs two node names, got %d", len(o.Nodes)))
	}
	if !slices.Contains(o.Variants, TCP) && !slices.Contains(o.Variants, TCPPodNetwork) {
		errs = append(errs, errors.New("test probe: the TCP probe runs only in the tcp and tcp-podnet variants"))
	}
	if o.ProbeStreams < 1 || o.ProbeStreams > benchprobe.MaxStreams {
		errs = append(errs, fmt.Errorf("probe streams %d: want 1 to %d", o.ProbeStreams, benchprobe.MaxStreams))
	}
	if d, err := time.ParseDuration(o.ProbeDuration); err != nil || d <= 0 || d > benchprobe.MaxDuration {
		errs = append(errs, fmt.Errorf("probe duration %q: want a duration in (0, %v]", o.ProbeDuration, benchprobe.MaxDuration))
	}
	return errs
}
