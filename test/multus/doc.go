// Package multus is a stand-in of the Multus thin plugin for the
// multi-node end-to-end tests, where containerd runs it as one of every
// pod's CNI networks. Multus is not on the Go module proxy, so this is
// built from its source (multus-cni at 95a0932, August 2026, and
// network-attachment-definition-client's pkg/utils), rule by rule, each
// rule citing the function it mirrors; the rules that name things live in
// internal/cni/multustest and are shared with the unit tests.
//
// What it does, as Multus does for a pod's additional networks: read the
// pod's k8s.v1.cni.cncf.io/networks annotation (parsePodNetworkAnnotation),
// get each NetworkAttachmentDefinition from the apiserver
// (getKubernetesDelegate), find the pod's device of the NAD's
// k8s.v1.cni.cncf.io/resourceName through kubelet's PodResources
// (GetResourceMapFromClient, one device ID per network of a resource in
// order), call the delegate through the real libcni with Multus's config
// and runtime arguments (LoadDelegateNetConf, delegateRuntimeConfig,
// newCNIRuntimeConf) on net1, net2, ... (or the interface asked for), read
// the delegate's device-info file and write the pod's
// k8s.v1.cni.cncf.io/network-status (CreateNetworkStatus,
// SetNetworkStatus). DEL calls every delegate's DEL from what ADD cached
// (Multus's delegate cache), and succeeds when there is nothing.
//
// What it leaves out: the cluster default network (containerd's own first
// network is the pod network here), default-route and MAC/IP requests,
// and the network-status of the default network.
package multus
