package schedtopo

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/fabric"
)

// API versions of the objects built here, and where their fields come
// from.
const (
	// KueueAPIVersion: kubernetes-sigs/kueue apis/kueue/v1beta2
	// (topology_types.go, resourceflavor_types.go): served since Kueue
	// v0.15, its storage version since v0.16 (kueue#7304, #8020).
	KueueAPIVersion = "kueue.x-k8s.io/v1beta2"
	// KAIAPIVersion: NVIDIA/KAI-Scheduler pkg/apis/kai/v1alpha1
	// topology_types.go (the v1 Topology of newer releases has the same
	// spec).
	KAIAPIVersion = "kai.scheduler/v1alpha1"
	// VolcanoTopologyAPIVersion: volcano-sh/apis
	// pkg/apis/topology/v1alpha1 hypernode_types.go.
	VolcanoTopologyAPIVersion = "topology.volcano.sh/v1alpha1"
)

// Meta is the metadata of the objects this package writes itself.
type Meta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Object is a Kueue, KAI or Volcano object, spelled as their CRDs are.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   Meta   `json:"metadata"`
	Spec       any    `json:"spec"`
}

// TopologyLevel is one level of a Kueue or KAI Topology.
type TopologyLevel struct {
	NodeLabel string `json:"nodeLabel"`
}

// TopologySpec is a Kueue or KAI Topology's spec: levels widest first,
// kubernetes.io/hostname last.
type TopologySpec struct {
	Levels []TopologyLevel `json:"levels"`
}

// ResourceFlavorSpec is the part of a Kueue ResourceFlavor's spec that
// ties it to a Topology (nodeLabels are required with topologyName).
type ResourceFlavorSpec struct {
	NodeLabels   map[string]string `json:"nodeLabels"`
	TopologyName string            `json:"topologyName"`
}

// ManagedByLabel marks the objects this package builds.
const ManagedByLabel = "app.kubernetes.io/managed-by"

func meta(name string) Meta {
	return Meta{Name: name, Labels: map[string]string{ManagedByLabel: "railyard"}}
}

func topologySpec(k fabric.LabelKeys) TopologySpec {
	var s TopologySpec
	for _, key := range Levels(k) {
		s.Levels = append(s.Levels, TopologyLevel{NodeLabel: key})
	}
	return s
}

// Kueue is Kueue's Topology name with the fabric's levels and the
// ResourceFlavor flavor that names it for the nodes with nodeLabels
// (Kueue requires at least one with a topology).
func Kueue(name, flavor string, k fabric.LabelKeys, nodeLabels map[string]string) ([]Object, error) {
	if len(nodeLabels) == 0 {
		return nil, fmt.Errorf("kueue: the ResourceFlavor needs at least one node label with a topology")
	}
	return []Object{
		{APIVersion: KueueAPIVersion, Kind: "Topology", Metadata: meta(name), Spec: topologySpec(k)},
		{APIVersion: KueueAPIVersion, Kind: "ResourceFlavor", Metadata: meta(flavor), Spec: ResourceFlavorSpec{NodeLabels: nodeLabels, TopologyName: name}},
	}, nil
}

// KAI is KAI Scheduler's Topology name with the fabric's levels.
func KAI(name string, k fabric.LabelKeys) Object {
	return Object{APIVersion: KAIAPIVersion, Kind: "Topology", Metadata: meta(name), Spec: topologySpec(k)}
}

// VolcanoConfigKey is the key of volcano-controller-configmap that holds
// the controller's configuration.
const VolcanoConfigKey = "volcano-controller.conf"

// volcanoLevel is one tier label of Volcano's label discovery.
type volcanoLevel struct {
	NodeLabel string `json:"nodeLabel"`
}

// volcanoDiscovery is the controller configuration's
// networkTopologyDiscovery entry for the label source (the list form:
// nodeLabel tiers widest first, kubernetes.io/hostname last; each other
// tier becomes HyperNodes, tier 1 the lowest).
type volcanoDiscovery struct {
	Source  string `json:"source"`
	Enabled bool   `json:"enabled"`
	Config  struct {
		NetworkTopologyTypes map[string][]volcanoLevel `json:"networkTopologyTypes"`
	} `json:"config"`
}

// VolcanoDiscovery is Volcano's controller ConfigMap (namespace: where
// Volcano runs) with HyperNode discovery from the fabric's labels: one
// network topology type, topologyType, whose tiers are the unit and the
// leaf set over kubernetes.io/hostname. Volcano reads only this key of
// the ConfigMap: a controller configuration with other settings must get
// the networkTopologyDiscovery entry merged in, not replaced.
func VolcanoDiscovery(namespace, topologyType string, k fabric.LabelKeys) (*corev1.ConfigMap, error) {
	d := volcanoDiscovery{Source: "label", Enabled: true}
	d.Config.NetworkTopologyTypes = map[string][]volcanoLevel{}
	for _, key := range Levels(k) {
		d.Config.NetworkTopologyTypes[topologyType] = append(d.Config.NetworkTopologyTypes[topologyType], volcanoLevel{NodeLabel: key})
	}
	conf, err := yaml.Marshal(map[string]any{"networkTopologyDiscovery": []volcanoDiscovery{d}})
	if err != nil {
		return nil, fmt.Errorf("volcano discovery configuration: %w", err)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "volcano-controller-configmap", Namespace: namespace,
			Labels: map[string]string{ManagedByLabel: "railyard"}},
		Data: map[string]string{VolcanoConfigKey: string(conf)},
	}, nil
}

// groupPolicy is gang scheduling of pods pods: all or none.
func groupPolicy(pods int) schedv1beta1.PodGroupSchedulingPolicy {
	return schedv1beta1.PodGroupSchedulingPolicy{Gang: &schedv1beta1.GangSchedulingPolicy{MinCount: int32(pods)}}
}

func constraints(key string) *schedv1beta1.PodGroupSchedulingConstraints {
	return &schedv1beta1.PodGroupSchedulingConstraints{Topology: []schedv1beta1.TopologyConstraint{{Key: key}}}
}

// PodGroup is kube-scheduler's PodGroup (scheduling.k8s.io/v1beta1,
// KEP-5732 topology-aware workload scheduling in Kubernetes 1.37) for a
// job of pods pods: gang scheduled (minCount pods), every pod on nodes
// with the same value of key. A pod joins it with
// spec.schedulingGroup.podGroupName.
func PodGroup(name, namespace, key string, pods int) *schedv1beta1.PodGroup {
	return &schedv1beta1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{ManagedByLabel: "railyard"}},
		Spec: schedv1beta1.PodGroupSpec{
			SchedulingPolicy:      groupPolicy(pods),
			SchedulingConstraints: constraints(key),
		},
	}
}

// Workload is the same group as a Workload's pod group template (name
// template), from which a workload controller makes the PodGroups.
func Workload(name, namespace, template, key string, pods int) *schedv1beta1.Workload {
	return &schedv1beta1.Workload{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1beta1.SchemeGroupVersion.String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{ManagedByLabel: "railyard"}},
		Spec: schedv1beta1.WorkloadSpec{PodGroupTemplates: []schedv1beta1.PodGroupTemplate{{
			Name:                  template,
			SchedulingPolicy:      groupPolicy(pods),
			SchedulingConstraints: constraints(key),
		}}},
	}
}
