// Package benchrun runs a benchmark plan (what `railyard bench plan`
// prints) on a Kubernetes cluster: it creates the plan's Services and pods
// (a client pod whose server is named by benchplan.AnnotationServerPod only
// once that server pod has an IP, which it gets through
// benchplan.EnvServerHost, so no cluster DNS is needed), waits for every
// run with a timeout while reporting progress, collects every pod's logs,
// parses each run's result pod with internal/bench, and deletes what it
// created (unless asked to keep it), also when its context is cancelled.
//
// A run is the objects sharing a benchplan.LabelRun label; its result is
// the log of its pod annotated benchplan.AnnotationResult. A run whose pod
// fails, that times out or that is interrupted is reported as failed with
// its reason, as a failed bench.Result, so a report never hides it; the
// other runs are unaffected.
//
// The cluster is behind the narrow Cluster interface. Kube implements it
// with a client-go clientset; the unit tests drive Kube with client-go's
// fake clientset and a fake kubelet (benchruntest) that moves pods through
// their phases (there is no container runtime there) and serves their
// logs, since the fake clientset's logs are a constant. The e2e suite runs the
// real thing (test/e2e/benchrun_test.go).
//
// A run's scenario in the report is its benchplan.LabelVariant, or its
// benchplan.LabelScenario when set (gpudirect-near, gpudirect-far). A run
// whose pods carry benchplan.AnnotationAfterRun starts once that run has
// finished, whatever its outcome (the GPUDirect pairs each take every GPU
// of their nodes).
//
// An MPIJob (kubeflow.org/v2beta1: nccl-tests, OSU, Horovod) is a run of
// its own. It is created with client-go's dynamic client (no MPI Operator
// Go types), once discovery says the cluster serves MPIJobs; a cluster
// without the MPI Operator fails those runs with ErrNoMPIOperator and runs
// the others. Its result is the log of its launcher pod (the operator's
// training.kubeflow.org/job-name and job-role=launcher labels); it ends
// when that pod ends or the MPIJob has a Succeeded or Failed condition,
// and its launcher's and workers' logs are read at once, before the
// operator deletes the workers. Cleanup deletes the MPIJob with background
// propagation and waits until its pods are gone too. The unit tests run
// MPIJobs through client-go's fake dynamic client with a fake MPI Operator
// (benchruntest.InstallMPIOperator).
package benchrun
