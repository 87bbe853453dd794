package benchplan

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// mpiRun is one MPIJob: workers pods (one per node) of slots ranks each,
// each worker requesting gpus GPUs and every rail of the variant, and a
// launcher running mpirun with mpiArgs, forwarding env, then program.
type mpiRun struct {
	parts     []string // name parts after the prefix: "nccl", "osu-latency", "hvd-n2"
	component string   // label: nccl, osu, horovod
	workers   int
	slots     int
	gpus      int
	mpiArgs   []string
	env       []corev1.EnvVar
	program   []string
}

// socketIfnames are the interfaces TCP traffic must use: the secondary
// interfaces (net1, net2...) or, without a secondary network, eth0.
func socketIfnames(o Options, v Variant) string {
	if v == TCPPodNetwork {
		return "eth0"
	}
	return strings.Join(interfaces(o.Rails), ",")
}

// ncclEnv is the environment every nccl-tests rank gets. Open MPI does not
// pass a worker container's environment to ranks it starts over ssh, so the
// launcher forwards each variable with -x.
func ncclEnv(o Options, v Variant) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}}
	if v != RDMA {
		env = append(env, corev1.EnvVar{Name: "NCCL_IB_DISABLE", Value: "1"})
		if ifnames := socketIfnames(o, v); ifnames != "" {
			env = append(env, corev1.EnvVar{Name: "NCCL_SOCKET_IFNAME", Value: ifnames})
		}
	}
	return append(env, o.NCCLEnv...)
}

func ncclRun(o Options, v Variant) mpiRun {
	return mpiRun{parts: []string{"nccl"}, component: "nccl", workers: o.Workers, slots: max(o.GPUsPerNode, 1),
		gpus: o.GPUsPerNode, env: ncclEnv(o, v),
		program: append([]string{o.NCCLTestsDir + "/" + o.NCCLTest}, o.NCCLArgs...)}
}

// openMPITransport selects how MPI itself moves data. RDMA: UCX limited to
// RDMA transports (rc) and shared memory, so a run that cannot use RDMA
// fails instead of quietly falling back to TCP. TCP: the ob1 PML over the
// TCP BTL, pinned to the secondary interfaces (IPoIB on an InfiniBand
// network) or, without a secondary network, eth0.
func openMPITransport(o Options, v Variant) (args []string, env []corev1.EnvVar) {
	if v == RDMA {
		return []string{"--mca", "pml", "ucx"}, []corev1.EnvVar{{Name: "UCX_TLS", Value: "rc,sm,self"}}
	}
	args = []string{"--mca", "pml", "ob1", "--mca", "btl", "tcp,self"}
	if ifnames := socketIfnames(o, v); ifnames != "" {
		args = append(args, "--mca", "btl_tcp_if_include", ifnames)
	}
	return args, nil
}

// OSU benchmarks the plan runs: point-to-point latency and bandwidth
// between two nodes, and allreduce across every worker.
var osuBenchmarks = []struct{ name, path string }{
	{"latency", "pt2pt/osu_latency"},
	{"bw", "pt2pt/osu_bw"},
	{"allreduce", "collective/osu_allreduce"},
}

func osuRuns(o Options, v Variant) []mpiRun {
	args, env := openMPITransport(o, v)
	var runs []mpiRun
	for _, b := range osuBenchmarks {
		workers := 2
		if b.name == "allreduce" {
			workers = o.Workers
		}
		runs = append(runs, mpiRun{parts: []string{"osu", b.name}, component: "osu", workers: workers, slots: 1,
			mpiArgs: args, env: env, program: []string{o.OSUDir + "/" + b.path}})
	}
	return runs
}

// horovodRuns is one Horovod MPIJob per node count. Both variants set
// HOROVOD_MPI_THREADS_DISABLE=1, as the published deployments did; the TCP
// variants add NCCL_IB_DISABLE=1 and pin NCCL's sockets and MPI's TCP
// transport to the TCP interfaces.
func horovodRuns(o Options, v Variant) []mpiRun {
	env := []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "HOROVOD_MPI_THREADS_DISABLE", Value: "1"}}
	var args []string
	if v != RDMA {
		env = append(env, corev1.EnvVar{Name: "NCCL_IB_DISABLE", Value: "1"})
		ifnames := socketIfnames(o, v)
		if ifnames != "" {
			env = append(env, corev1.EnvVar{Name: "NCCL_SOCKET_IFNAME", Value: ifnames})
		}
		args, _ = openMPITransport(o, v)
	}
	env = append(env, o.NCCLEnv...)
	var runs []mpiRun
	for _, n := range o.HorovodNodes {
		runs = append(runs, mpiRun{parts: []string{"hvd", "n" + itoa(n)}, component: "horovod", workers: n,
			slots: max(o.GPUsPerNode, 1), gpus: o.GPUsPerNode, mpiArgs: args, env: env,
			program: append([]string{"python3", o.HorovodScript}, o.HorovodArgs...)})
	}
	return runs
}

// mpiJob builds the MPIJob of a run, preceded by its ResourceClaimTemplate
// when a rail is delivered by DRA (the workers claim it; the launcher
// needs no rail).
func mpiJob(o Options, v Variant, r mpiRun) ([]runtime.Object, error) {
	args := []string{"mpirun", "--allow-run-as-root", "-np", itoa(r.workers * r.slots), "-bind-to", "none", "-map-by", "slot"}
	args = append(args, r.mpiArgs...)
	for _, e := range r.env {
		args = append(args, "-x", e.Name)
	}
	args = append(args, r.program...)
	launcher := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels(o, r.component+"-launcher", v)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers: []corev1.Container{{
				Name:    "launcher",
				Image:   o.Image,
				Command: args,
				Env:     r.env,
			}},
		},
	}
	jobName := name(o, v, r.parts...)
	workerLabels := labels(o, r.component+"-worker", v)
	workerLabels[labelJob] = jobName // anti-affinity among this job's workers only
	worker := corev1.PodTemplateSpec{
		ObjectMeta: podMeta(o, "", r.component+"-worker", v),
		Spec: corev1.PodSpec{
			Affinity: workerAffinity(o, map[string]string{labelJob: jobName}),
			Containers: []corev1.Container{{
				Name:            "worker",
				Image:           o.Image,
				Command:         []string{"/usr/sbin/sshd", "-De"},
				Env:             r.env,
				Resources:       resources(o, r.gpus),
				SecurityContext: securityContext(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
			}},
			// NCCL and MPI move intra-node data through /dev/shm; the
			// container default of 64 MiB is too small.
			Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(8<<30, resource.BinarySI)},
			}}},
		},
	}
	worker.Labels = workerLabels
	var objs []runtime.Object
	if hasDRA(o.Rails) {
		worker.Spec.ResourceClaims = podRailsClaims(jobName)
		objs = append(objs, railsTemplate(o, jobName, runLabels(o, railsComponent, v, jobName, Test(r.component))))
	}
	if len(o.PodResources) > 0 {
		addPodResources(o.PodResources, &worker.Spec) // the workers carry the traffic; the launcher only starts it
	}
	lt, err := toMap(&launcher)
	if err != nil {
		return nil, err
	}
	wt, err := toMap(&worker)
	if err != nil {
		return nil, err
	}
	return append(objs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": MPIJobAPIVersion,
		"kind":       MPIJobKind,
		"metadata": map[string]any{
			"name":      jobName,
			"namespace": o.Namespace,
			"labels":    stringMap(labels(o, r.component, v)),
		},
		"spec": map[string]any{
			"slotsPerWorker":    int64(r.slots),
			"runPolicy":         map[string]any{"cleanPodPolicy": "Running"},
			"mpiImplementation": "OpenMPI",
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{"replicas": int64(1), "template": lt},
				"Worker":   map[string]any{"replicas": int64(r.workers), "template": wt},
			},
		},
	}}), nil
}

// workerAffinity keeps a job's workers on distinct nodes and, when nodes
// are named, on those nodes.
func workerAffinity(o Options, sel map[string]string) *corev1.Affinity {
	a := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
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
