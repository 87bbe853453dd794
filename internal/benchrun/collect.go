package benchrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/bench"
)

// collect reads the log of every created pod whose container started,
// for the runs whose logs were not read yet.
func (e *executor) collect(parent context.Context) {
	for _, rs := range e.runs {
		if !rs.collected {
			e.collectRun(parent, rs)
		}
	}
}

// collectRun reads the logs of a run's pods: those of the plan, or an
// MPIJob's launcher and workers.
func (e *executor) collectRun(parent context.Context, rs *runState) {
	ctx, cancel := context.WithTimeout(parent, collectTimeout)
	defer cancel()
	rs.collected = true
	rs.logs = map[string][]byte{}
	var pods []*corev1.Pod
	if rs.run.MPIJob != nil {
		pods = sortedPods(rs.pods)
	} else {
		for _, pod := range rs.run.Pods {
			if cur := rs.pods[pod.Name]; cur != nil {
				pods = append(pods, cur)
			}
		}
	}
	for _, cur := range pods {
		if !started(cur) {
			continue
		}
		for _, ct := range cur.Spec.Containers {
			data, err := e.c.PodLogs(ctx, cur.Namespace, cur.Name, ct.Name, MaxLogBytes)
			if err != nil {
				rs.logErrs = append(rs.logErrs, fmt.Sprintf("logs of %s/%s: %v", cur.Name, ct.Name, err))
				continue
			}
			if len(cur.Spec.Containers) > 1 {
				data = append([]byte(fmt.Sprintf("==> container %s <==\n", ct.Name)), data...)
			}
			rs.logs[cur.Name] = append(rs.logs[cur.Name], data...)
		}
	}
}

func started(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// outcome parses the result pod's log and says how the run ended. A run
// that did not succeed is a failed result whose error is the reason.
func (rs *runState) outcome(o bench.Options) RunOutcome {
	ns, resName, source := rs.resultPod()
	nodes := 0
	if rs.run.MPIJob != nil {
		nodes = mpiWorkers(rs.run.MPIJob)
	}
	out := RunOutcome{Name: rs.run.Name, Test: rs.run.Test, Scenario: rs.run.Variant, Status: rs.status, Reason: rs.reason,
		Logs: rs.logs, Nodes: nodes, ServerVia: rs.serverVia}
	if resName != "" {
		out.ResultPod = ns + "/" + resName
	}
	if rs.run.Scenario != "" {
		out.Scenario = rs.run.Scenario
	}
	if out.Scenario == "" {
		out.Scenario = rs.run.Name
	}
	logs, haveLog := rs.logs[resName]
	var r bench.Result
	if haveLog {
		r = bench.ParseWith(logs, o)
	}
	if out.Status == Succeeded {
		switch {
		case resName == "":
			out.Status, out.Reason = Failed, "MPIJob "+rs.run.MPIJob.GetName()+" succeeded but its launcher pod was never seen"
		case !haveLog:
			out.Status, out.Reason = Failed, "the result pod's log could not be read: "+strings.Join(rs.logErrs, "; ")
		case !r.OK:
			out.Status, out.Reason = Failed, "pod "+resName+" succeeded but its output is not a result: "+r.Error
		}
	}
	if out.Status != Succeeded {
		if r.Error != "" && !strings.Contains(out.Reason, r.Error) {
			out.Reason += "; its output: " + r.Error
		}
		r.OK, r.Error = false, out.Reason
	}
	if r.Tool == "" || r.Tool == bench.ToolUnknown {
		r.Tool = rs.run.Test
	}
	if r.Summary == nil {
		r.Summary = map[string]float64{}
	}
	r.Source = source
	out.Result = r
	return out
}

// resultPod is the namespace and name of the pod whose log is the run's
// result ("" for an MPIJob whose launcher was never seen) and the
// result's source.
func (rs *runState) resultPod() (ns, name, source string) {
	if j := rs.run.MPIJob; j != nil {
		if rs.launcher == "" {
			return j.GetNamespace(), "", "mpijob/" + j.GetNamespace() + "/" + j.GetName()
		}
		return j.GetNamespace(), rs.launcher, "pod/" + j.GetNamespace() + "/" + rs.launcher
	}
	return rs.run.Result.Namespace, rs.run.Result.Name, "pod/" + rs.run.Result.Namespace + "/" + rs.run.Result.Name
}

// cleanup deletes what the run created, newest first, and waits until it
// is gone. Once parent is done (Ctrl-C) it only sends the deletes, within
// InterruptedCleanup.
func (e *executor) cleanup(parent context.Context) error {
	if len(e.created) == 0 {
		return nil
	}
	interrupted := parent.Err() != nil
	timeout := e.o.CleanupTimeout
	if interrupted {
		timeout = InterruptedCleanup
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), timeout)
	defer cancel()
	var errs []error
	for _, c := range slices.Backward(e.created) {
		if err := e.c.Delete(ctx, c.kind, c.ns, c.name); err != nil {
			errs = append(errs, fmt.Errorf("delete %s %s/%s: %w", c.kind, c.ns, c.name, err))
		}
	}
	if interrupted || len(errs) > 0 {
		return errors.Join(errs...)
	}
	left := e.created
	for {
		var still []created
		for _, c := range left {
			ok, err := e.c.Exists(ctx, c.kind, c.ns, c.name)
			if err != nil || ok {
				still = append(still, c)
			}
		}
		if len(still) == 0 {
			return nil
		}
		left = still
		select {
		case <-ctx.Done():
			var names []string
			for _, c := range left {
				names = append(names, c.kind+" "+c.ns+"/"+c.name)
			}
			return fmt.Errorf("still present %v after deleting them: %s", timeout, strings.Join(names, ", "))
		case <-time.After(e.o.Poll):
		}
	}
}
