// Package railctl chooses a job's rails when the job is admitted: the
// controller behind `railyard rails controller` (docs/alloc.md, "Rails
// chosen at admission").
//
// A pod labelled railyard.io/rails=same asks for the rail set of its job.
// Its job is the top of its owner chain (a batch Job's own controller: a
// JobSet, an MPIJob; else the Job or whatever controls the pod), else its
// scheduling.k8s.io PodGroup (spec.schedulingGroup), else the value of its
// railyard.io/job label (JobOf). At the job's first pod the mutating
// webhook (Webhook) chooses one rail set with internal/jobrails, the code
// behind `railyard rails template`, creates the job's
// ResourceClaimTemplate (owned by the job, so the garbage collector
// deletes it with the job) and patches every pod of the job to claim it
// (PodPatch). The leader's loop (Controller.Reconcile) re-chooses a job
// whose pods have stayed unschedulable on its set (Rechoose) while another
// set has room, before any pod of the job is bound, and deletes
// templates nothing needs any more.
//
// The pure parts (job identity, template names, the patch, the re-choice
// decision) take no client; the webhook and the loop take a
// kubernetes.Interface and a clock (a struct field, for the tests).
package railctl
