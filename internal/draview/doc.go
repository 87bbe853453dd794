// Package draview is the file through which the agent's DRA kubelet
// plugin (internal/draplugin, the only writer) tells railyard-cni which
// network devices the node's prepared ResourceClaims hold and for which
// pods: the node's DRA pools (resource names) and, per prepared claim, the
// pods it is reserved for and its devices (PCI address, pool, RDMA device,
// PF, rail) in rail order.
//
// railyard-cni runs per pod and links no Kubernetes library, so it cannot
// read the plugin's checkpoint (which keeps the published API objects):
// this package holds only plain types, the strict parser (fuzzed) and the
// atomic writer (renameio, then a directory fsync), so the file has one
// format and one writer. The file lives in the binding directory
// (railyard-cni's bindingDir), next to internal/binding's view.
package draview
