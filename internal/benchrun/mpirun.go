package benchrun

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// createMPIJob creates an MPIJob run's MPIJob. A cluster that does not
// serve MPIJobs fails that run only, whatever came before it.
func (e *executor) createMPIJob(ctx context.Context, rs *runState) error {
	job := rs.run.MPIJob.DeepCopy()
	if err := e.c.CreateMPIJob(ctx, job); err != nil {
		if errors.Is(err, ErrNoMPIOperator) {
			rs.fail(Failed, err.Error())
			return nil
		}
		if err := e.fatal(err, kindMPIJob, job.GetNamespace(), job.GetName()); err != nil {
			return err
		}
		rs.fail(Failed, fmt.Sprintf("create MPIJob %s: %v", job.GetName(), err))
		return nil
	}
	e.created = append(e.created, created{kindMPIJob, job.GetNamespace(), job.GetName()})
	return nil
}

// updateMPIJob reads an MPIJob run's MPIJob and pods. The run fails when
// its launcher pod fails, the MPIJob has a Failed condition or a pod
// cannot start; it succeeds when its launcher pod succeeds or the MPIJob
// has a Succeeded condition. Its logs are read at once then: the
// operator deletes the workers when the launcher ends.
func (e *executor) updateMPIJob(ctx context.Context, rs *runState) {
	ns, name := rs.run.MPIJob.GetNamespace(), rs.run.MPIJob.GetName()
	job, err := e.c.GetMPIJob(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		rs.fail(Failed, fmt.Sprintf("MPIJob %s disappeared (deleted by someone else?)", name))
		return
	case err != nil:
		return // transient; the timeout bounds a cluster that stays away
	}
	rs.job = job
	if pods, err := e.c.ListPods(ctx, ns, mpiJobSelector(name)); err == nil {
		rs.pods = map[string]*corev1.Pod{}
		var launchers []*corev1.Pod
		for i := range pods {
			p := &pods[i]
			rs.pods[p.Name] = p
			if p.Labels[LabelMPIJobRole] == roleLauncher {
				launchers = append(launchers, p)
			}
		}
		rs.launcher = ""
		if l := newest(launchers); l != nil {
			rs.launcher = l.Name
		}
	}
	launcher := rs.pods[rs.launcher]
	failed, jobFailed := trueCondition(job, "Failed")
	_, jobSucceeded := trueCondition(job, "Succeeded")
	switch {
	case launcher != nil && launcher.Status.Phase == corev1.PodFailed:
		reason := "launcher pod " + launcher.Name + " failed: " + describe(launcher)
		if jobFailed {
			reason += "; MPIJob " + failed.String()
		}
		rs.fail(Failed, reason)
	case jobFailed:
		rs.fail(Failed, "MPIJob "+name+" failed: "+failed.String()+"; "+rs.mpiPods())
	case launcher != nil && launcher.Status.Phase == corev1.PodSucceeded, jobSucceeded:
		rs.status, rs.finished = Succeeded, true
	default:
		for _, p := range sortedPods(rs.pods) {
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && permanentWaiting[w.Reason] {
					rs.fail(Failed, fmt.Sprintf("pod %s of MPIJob %s cannot start: %s: %s", p.Name, name, w.Reason, w.Message))
				}
			}
		}
	}
	if rs.finished {
		e.collectRun(ctx, rs)
	}
}

// newest is the launcher pod created last (the Job may replace a failed
// one), by name among equals.
func newest(pods []*corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	for _, p := range pods {
		if best == nil || best.CreationTimestamp.Before(&p.CreationTimestamp) ||
			(best.CreationTimestamp.Equal(&p.CreationTimestamp) && p.Name > best.Name) {
			best = p
		}
	}
	return best
}

// sortedPods is the pods by name, launchers first.
func sortedPods(pods map[string]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		li, lj := out[i].Labels[LabelMPIJobRole] == roleLauncher, out[j].Labels[LabelMPIJobRole] == roleLauncher
		if li != lj {
			return li
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// mpiWaitingFor describes an unfinished MPIJob run: the MPIJob's
// conditions (none: is the operator running?), its launcher and workers.
func (rs *runState) mpiWaitingFor() string {
	name := rs.run.MPIJob.GetName()
	if rs.job == nil {
		return "waiting for MPIJob " + name + " (not seen yet)"
	}
	var conds []string
	for _, c := range conditions(rs.job) {
		conds = append(conds, c.String())
	}
	status := "no status yet: is the MPI Operator's controller running?"
	if len(conds) > 0 {
		status = "conditions " + strings.Join(conds, ", ")
	}
	return "waiting for MPIJob " + name + " (" + status + "); " + rs.mpiPods()
}

// mpiPods describes an MPIJob's launcher pod and its workers (identical
// states counted once).
func (rs *runState) mpiPods() string {
	var parts []string
	if l := rs.pods[rs.launcher]; l != nil {
		parts = append(parts, "launcher pod "+l.Name+" "+describe(l))
	} else {
		parts = append(parts, "no launcher pod")
	}
	counts := map[string]int{}
	var order []string
	workers := 0
	for _, p := range sortedPods(rs.pods) {
		if p.Labels[LabelMPIJobRole] != roleWorker {
			continue
		}
		workers++
		d := describe(p)
		if counts[d] == 0 {
			order = append(order, d)
		}
		counts[d]++
	}
	w := fmt.Sprintf("%d of %d worker pods", workers, mpiWorkers(rs.run.MPIJob))
	for _, d := range order {
		w += fmt.Sprintf(", %d %s", counts[d], d)
	}
	return strings.Join(append(parts, w), "; ")
}
