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

// collect reads the log of every created pod whose container started.
func (e *executor) collect(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, collectTimeout)
	defer cancel()
	for _, rs := range e.runs {
		rs.logs = map[string][]byte{}
		for _, pod := range rs.run.Pods {
			cur := rs.pods[pod.Name]
			if cur == nil || !started(cur) {
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
				rs.logs[pod.Name] = append(rs.logs[pod.Name], data...)
			}
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
	res := rs.run.Result
	out := RunOutcome{Name: rs.run.Name, Test: rs.run.Test, Scenario: rs.run.Variant, Status: rs.status, Reason: rs.reason,
		ResultPod: res.Namespace + "/" + res.Name, Logs: rs.logs}
	if rs.run.Scenario != "" {
		out.Scenario = rs.run.Scenario
	}
	if out.Scenario == "" {
		out.Scenario = rs.run.Name
	}
	logs, haveLog := rs.logs[res.Name]
	var r bench.Result
	if haveLog {
		r = bench.ParseWith(logs, o)
	}
	if out.Status == Succeeded {
		switch {
		case !haveLog:
			out.Status, out.Reason = Failed, "the result pod's log could not be read: "+strings.Join(rs.logErrs, "; ")
		case !r.OK:
			out.Status, out.Reason = Failed, "pod "+res.Name+" succeeded but its output is not a result: "+r.Error
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
	r.Source = "pod/" + out.ResultPod
	out.Result = r
	return out
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
