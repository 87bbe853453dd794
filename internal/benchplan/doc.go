// Package benchplan generates the Kubernetes manifests that run RDMA
// benchmarks on Railyard's resources: a perftest server/client pod pair on
// two named nodes, an nccl-tests MPIJob (kubeflow.org/v2beta1) across N
// nodes, OSU MPIJobs (latency, bandwidth, allreduce) and Horovod MPIJobs
// for 1, 2, 4... nodes, each in an RDMA variant, a TCP variant over the same
// secondary network (iperf3 for the pair, NCCL_IB_DISABLE=1 for NCCL, Open
// MPI's TCP transport for OSU) and a TCP variant without the secondary
// network (pod network). Every benchmark pod requests the
// pool's extended resource, carries the secondary-network annotation and
// adds only the IPC_LOCK capability: no privileged mode.
//
// Objects returns the objects (typed Pods and Services, an unstructured
// MPIJob) so tests and the e2e suite can inspect them or send them to a
// kube-apiserver with a server-side dry run; YAML renders them.
package benchplan
