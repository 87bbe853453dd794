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
// Only Pods and Services are run; MPIJobs (nccl-tests, OSU, Horovod) need
// the MPI Operator and are refused with a clear error.
package benchrun
