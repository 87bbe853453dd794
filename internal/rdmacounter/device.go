package rdmacounter

import (
	"github.com/railyard-io/railyard/internal/topology"
)

// Kinds of PCI function.
const (
	KindPF = "pf"
	KindVF = "vf"
)

// Owner is who holds a device: a container of a pod, and the job the pod
// belongs to (JobName). The zero Owner is "nobody".
type Owner struct {
	Namespace, Pod, Container, Job string
}

// Device is one RDMA device whose ports are read, and who holds it.
type Device struct {
	RDMA  string // "mlx5_3"
	Ports []int  // port numbers, from 1
	PCI   string // the PCI function's address
	Kind  string // KindPF or KindVF
	Rail  int    // the rail (topology.NICRails), -1 for none
	Owner Owner
}

// Devices lists the node's RDMA devices from the model, in its order:
// every NIC (a PF) with an RDMA device, and every VF with one of its own;
// a VF's rail is its PF's. owners maps a PCI address to the container
// holding that function (from PodResources and the pod); a device not in
// it has no owner. A PF shared by several pods (shares, `<pci>-s<k>`)
// cannot have its counters split among them: leave it out of owners.
func Devices(t *topology.Topology, owners map[string]Owner) []Device {
	rails := t.NICRails()
	var out []Device
	for _, n := range t.NICs {
		rail, ok := rails[n.PCI]
		if !ok {
			rail = -1
		}
		if n.RDMA != "" {
			out = append(out, Device{RDMA: n.RDMA, Ports: portNums(n.Ports), PCI: n.PCI, Kind: KindPF, Rail: rail, Owner: owners[n.PCI]})
		}
		for _, vf := range n.VFs {
			if vf.RDMA != "" {
				out = append(out, Device{RDMA: vf.RDMA, Ports: portNums(vf.Ports), PCI: vf.PCI, Kind: KindVF, Rail: rail, Owner: owners[vf.PCI]})
			}
		}
	}
	return out
}

// portNums returns the ports' numbers; a device whose ports discovery
// could not read has port 1 (every RDMA device has it).
func portNums(ports []topology.Port) []int {
	if len(ports) == 0 {
		return []int{1}
	}
	out := make([]int, len(ports))
	for i, p := range ports {
		out[i] = p.Num
	}
	return out
}

// jobLabels are the pod labels that name a job, first found wins: each is
// set on the pods by the controller that made them, and names the
// workload an operator thinks of as the job (a JobSet rather than its
// child Jobs, a PyTorchJob or MPIJob rather than its replica type).
var jobLabels = []string{
	"jobset.sigs.k8s.io/jobset-name",
	"training.kubeflow.org/job-name",
	"leaderworkerset.sigs.k8s.io/name",
	"batch.kubernetes.io/job-name",
	"job-name", // batch/v1 Jobs before Kubernetes 1.27
}

// JobName returns the job a pod belongs to: the first of the job labels
// its controller set (jobset.sigs.k8s.io/jobset-name,
// training.kubeflow.org/job-name, leaderworkerset.sigs.k8s.io/name,
// batch.kubernetes.io/job-name, job-name), else the name of its
// controller owner reference (controller: "" when it has none), else "".
// docs/counters.md says why labels come first.
func JobName(labels map[string]string, controller string) string {
	for _, l := range jobLabels {
		if v := labels[l]; v != "" {
			return v
		}
	}
	return controller
}
