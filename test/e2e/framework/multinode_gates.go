//go:build e2e

package framework

// GroupSchedulingGates are the feature gates of Kubernetes 1.37's group
// scheduling: PodGroups and Workloads (GenericWorkload, beta, off by
// default) and their topology constraints (TopologyAwareWorkloadScheduling,
// alpha). 1.35 has neither the second gate nor the beta API.
const GroupSchedulingGates = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"

// controlPlaneFlags are the control plane's flags for what cfg turns on;
// apiserver adds the API server's own (the APIs it serves).
func (c *MultiConfig) controlPlaneFlags(apiserver bool) []string {
	if !c.GroupScheduling {
		return nil
	}
	out := []string{"--feature-gates", GroupSchedulingGates}
	if apiserver {
		// A beta API is off unless asked for.
		out = append(out, "--runtime-config", "scheduling.k8s.io/v1beta1=true")
	}
	return out
}

// moreControllers are the controller manager's controllers for what cfg
// turns on: with group scheduling, the one that removes a deleted
// PodGroup's finalizer (scheduling.k8s.io/podgroup-protection) once its
// pods are gone.
func (c *MultiConfig) moreControllers() []string {
	if !c.GroupScheduling {
		return nil
	}
	return []string{"podgroup-protection-controller"}
}
