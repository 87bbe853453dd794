package benchplan

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/railyard-io/railyard/internal/containerdev"
)

// What published RDMA pods carry besides their RDMA device: hugepages, CPU
// and memory requests (equal to the limits, so the pod is Guaranteed and a
// Topology Manager with the static CPU manager pins its CPUs on the NIC's
// NUMA node), a bare-metal baseline and rdma_cm's addressing.
const (
	// ScenarioBareMetal labels the hostNetwork perftest pair: bench's
	// pod-vs-bare-metal check compares the rdma pods with it.
	ScenarioBareMetal = "bare-metal"
	hugepagesVolume   = "hugepages"
	hugepagesMount    = "/dev/hugepages"
	infinibandVolume  = "dev-infiniband"
	infinibandDir     = containerdev.Dir
)

// ParsePodResources reads NAME=QUANTITY,... (hugepages-1Gi=4Gi,cpu=6,
// memory=8Gi): the CPU, memory and hugepages every benchmark pod
// requests. Other resources have their own flags (RDMA pools, GPUs).
func ParsePodResources(s string) (corev1.ResourceList, error) {
	list := corev1.ResourceList{}
	var errs []error
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" || v == "" {
			errs = append(errs, fmt.Errorf("%q: want NAME=QUANTITY such as cpu=6", kv))
			continue
		}
		if k != string(corev1.ResourceCPU) && k != string(corev1.ResourceMemory) && !strings.HasPrefix(k, corev1.ResourceHugePagesPrefix) {
			errs = append(errs, fmt.Errorf("%q: want cpu, memory or hugepages-<size> (RDMA and GPU resources have their own flags)", k))
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("%s=%s: want a positive quantity such as 4Gi", k, v))
			continue
		}
		if _, dup := list[corev1.ResourceName(k)]; dup {
			errs = append(errs, fmt.Errorf("%s: given twice", k))
			continue
		}
		list[corev1.ResourceName(k)] = q
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pod resources: %w", err)
	}
	return list, nil
}

// hasHugepages reports whether the pod resources request hugepages.
func hasHugepages(l corev1.ResourceList) bool {
	for k := range l {
		if strings.HasPrefix(string(k), corev1.ResourceHugePagesPrefix) {
			return true
		}
	}
	return false
}

// withPodResources adds the pod resources to every benchmark container's
// requests and limits (equal: hugepages require it, and cpu and memory
// requests equal to limits make the pod Guaranteed) and mounts hugepages
// at /dev/hugepages when requested.
func withPodResources(o Options, objs []runtime.Object) []runtime.Object {
	if len(o.PodResources) == 0 {
		return objs
	}
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			addPodResources(o.PodResources, &pod.Spec)
		}
	}
	return objs
}

// addPodResources adds the resources to every container of a pod spec.
func addPodResources(l corev1.ResourceList, spec *corev1.PodSpec) {
	names := make([]string, 0, len(l))
	for k := range l {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		for _, k := range names {
			c.Resources.Requests[corev1.ResourceName(k)] = l[corev1.ResourceName(k)].DeepCopy()
			c.Resources.Limits[corev1.ResourceName(k)] = l[corev1.ResourceName(k)].DeepCopy()
		}
		if hasHugepages(l) && !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == hugepagesVolume }) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: hugepagesVolume, MountPath: hugepagesMount})
		}
	}
	if hasHugepages(l) && !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == hugepagesVolume }) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: hugepagesVolume,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}}})
	}
}

// bareMetalPair is the perftest pair on the hosts' own network: hostNetwork
// pods on the same nodes, without a secondary network or an RDMA pool,
// reaching the host's RDMA devices through /dev/infiniband (privileged:
// no device plugin hands them a device). Labelled scenario bare-metal.
func bareMetalPair(o Options) []runtime.Object {
	bo := o
	bo.Name = o.Name + "-bm"
	bo.Rails = nil
	bo.ServerAddress = "" // the Service resolves to the server node's address
	svc, server, client := perftestPair(bo, RDMA)
	t := true
	for _, pod := range []*corev1.Pod{server, client} {
		pod.Spec.HostNetwork = true
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		c := &pod.Spec.Containers[0]
		c.SecurityContext.Privileged, c.SecurityContext.AllowPrivilegeEscalation = &t, &t
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: infinibandVolume, MountPath: infinibandDir})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: infinibandVolume,
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: infinibandDir}}})
	}
	for _, m := range []*metav1.ObjectMeta{&svc.ObjectMeta, &server.ObjectMeta, &client.ObjectMeta} {
		m.Labels[LabelScenario] = ScenarioBareMetal
	}
	return []runtime.Object{svc, server, client}
}

// usesRDMACM reports whether perftest's arguments ask for rdma_cm (-R).
func usesRDMACM(args []string) bool {
	return slices.Contains(args, "-R") || slices.Contains(args, "--rdma_cm")
}
