// Package schedtopo hands the rail fabric to topology-aware schedulers:
// from the fabric's node labels (internal/fabric: the unit label, the
// leaf-set label, and kubernetes.io/hostname below them) it builds the
// objects each scheduler reads to place a job's pods under one value of a
// label:
//
//   - Kueue (Topology Aware Scheduling): a Topology (kueue.x-k8s.io/v1beta2,
//     spec.levels[].nodeLabel) and a ResourceFlavor naming it
//     (spec.nodeLabels, spec.topologyName);
//   - Volcano (network topology aware scheduling): the label source of its
//     HyperNode discovery (volcano-controller-configmap,
//     networkTopologyDiscovery, source: label, one list of nodeLabel tiers),
//     or HyperNodes themselves (topology.volcano.sh/v1alpha1) built from the
//     labels' values: a tier-1 HyperNode per leaf set, selecting its nodes
//     by label, and a tier-2 HyperNode per unit over its leaf sets;
//   - KAI Scheduler: a Topology (kai.scheduler/v1alpha1, the same levels);
//   - kube-scheduler's group scheduling (KEP-5732, Kubernetes 1.37): a
//     PodGroup or a Workload (scheduling.k8s.io/v1beta1) whose scheduling
//     constraint keeps every pod under one value of a level's key.
//
// The Kueue, Volcano and KAI objects are this package's own structs with
// those projects' field names (their Go modules are not dependencies);
// the PodGroup and the Workload are k8s.io/api's types. Nothing here talks
// to a cluster: Group reads nodes' labels the caller lists.
package schedtopo
