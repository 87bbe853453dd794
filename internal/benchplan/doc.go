// Package benchplan generates the Kubernetes manifests that run RDMA
// benchmarks on Railyard's resources: a perftest server/client pod pair on
// two named nodes and an nccl-tests MPIJob (kubeflow.org/v2beta1) across N
// nodes, each in an RDMA variant and a TCP variant (iperf3 for the pair,
// NCCL_IB_DISABLE=1 for nccl-tests). Every benchmark pod requests the
// pool's extended resource, carries the secondary-network annotation and
// adds only the IPC_LOCK capability: no privileged mode.
//
// Objects returns the objects (typed Pods and Services, an unstructured
// MPIJob) so tests and the e2e suite can inspect them or send them to a
// kube-apiserver with a server-side dry run; YAML renders them.
package benchplan
