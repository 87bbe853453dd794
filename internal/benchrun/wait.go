package benchrun

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/railyard-io/railyard/internal/benchplan"
)

// permanentWaiting are container waiting reasons that no wait cures.
var permanentWaiting = map[string]bool{
	"ErrImageNeverPull": true, "InvalidImageName": true, "CreateContainerConfigError": true,
	"CreateContainerError": true, "RunContainerError": true,
}

// wait polls the pods until every run has finished or ctx is done.
func (e *executor) wait(ctx context.Context) {
	tick := time.NewTicker(e.o.Poll)
	defer tick.Stop()
	for {
		e.observe(ctx)
		if e.allFinished() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (e *executor) allFinished() bool {
	for _, rs := range e.runs {
		if !rs.finished {
			return false
		}
	}
	return true
}

// observe reads the pods, updates every unfinished run, creates clients
// whose server has an IP and reports progress.
func (e *executor) observe(ctx context.Context) {
	seen := map[string]*corev1.Pod{}
	listed := map[string]bool{}
	for _, ns := range e.namespaces() {
		pods, err := e.c.ListPods(ctx, ns, benchplan.LabelRun)
		if err != nil {
			continue // transient; the timeout bounds a cluster that stays away
		}
		listed[ns] = true
		for i := range pods {
			seen[pods[i].Namespace+"/"+pods[i].Name] = &pods[i]
		}
	}
	for _, rs := range e.runs {
		if rs.finished {
			continue
		}
		if !rs.started {
			if after := e.run(rs.run.After); after != nil && after.finished {
				if err := e.startRun(ctx, rs); err != nil {
					rs.fail(Failed, err.Error()) // an object exists already: this run only, the others run on
				}
			}
			continue
		}
		if rs.run.MPIJob != nil {
			e.updateMPIJob(ctx, rs)
			continue
		}
		e.update(ctx, rs, seen, listed)
	}
	if e.o.Progress != nil {
		e.o.Progress(e.progress())
	}
}

func (e *executor) run(name string) *runState {
	for _, rs := range e.runs {
		if rs.run.Name == name {
			return rs
		}
	}
	return nil
}

func (e *executor) namespaces() []string {
	set := map[string]bool{}
	for _, rs := range e.runs {
		for _, p := range rs.run.Pods {
			set[p.Namespace] = true
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

func (e *executor) update(ctx context.Context, rs *runState, seen map[string]*corev1.Pod, listed map[string]bool) {
	for _, pod := range rs.run.Pods {
		if !rs.created[pod.Name] {
			continue
		}
		cur, ok := seen[pod.Namespace+"/"+pod.Name]
		if !ok {
			if listed[pod.Namespace] {
				rs.fail(Failed, fmt.Sprintf("pod %s disappeared (deleted by someone else?)", pod.Name))
				return
			}
			continue
		}
		rs.pods[pod.Name] = cur
		if cur.Status.Phase == corev1.PodFailed {
			rs.fail(Failed, "pod "+pod.Name+" failed: "+describe(cur))
			return
		}
		for _, cs := range cur.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && permanentWaiting[w.Reason] {
				rs.fail(Failed, fmt.Sprintf("pod %s cannot start: %s: %s", pod.Name, w.Reason, w.Message))
				return
			}
		}
	}
	if res := rs.pods[rs.run.Result.Name]; res != nil && res.Status.Phase == corev1.PodSucceeded {
		rs.status, rs.finished = Succeeded, true
		return
	}
	for _, pod := range rs.run.Pods {
		server := pod.Annotations[benchplan.AnnotationServerPod]
		if server == "" || rs.created[pod.Name] {
			continue
		}
		sp := rs.pods[server]
		if sp == nil {
			continue
		}
		switch {
		case sp.Status.Phase == corev1.PodSucceeded:
			rs.fail(Failed, fmt.Sprintf("server pod %s exited before its client %s started", server, pod.Name))
			return
		case sp.Status.Phase == corev1.PodRunning && sp.Status.PodIP != "":
			if rs.serverRunning[server].IsZero() {
				rs.serverRunning[server] = time.Now()
			}
			host, via, final := serverHost(ctx, e.c, sp, time.Since(rs.serverRunning[server]))
			if !final {
				continue // its claims may still record its address
			}
			rs.serverVia = via
			client := withServerHost(pod.DeepCopy(), host)
			if err := e.createPod(ctx, rs, client); err != nil {
				rs.fail(Failed, fmt.Sprintf("create pod %s: %v", pod.Name, err))
				return
			}
		}
	}
}

// withServerHost sets benchplan.EnvServerHost in every container of pod.
func withServerHost(pod *corev1.Pod, ip string) *corev1.Pod {
	for i := range pod.Spec.Containers {
		ct := &pod.Spec.Containers[i]
		set := false
		for j := range ct.Env {
			if ct.Env[j].Name == benchplan.EnvServerHost {
				ct.Env[j].Value, ct.Env[j].ValueFrom, set = ip, nil, true
			}
		}
		if !set {
			ct.Env = append(ct.Env, corev1.EnvVar{Name: benchplan.EnvServerHost, Value: ip})
		}
	}
	return pod
}

func (e *executor) progress() Progress {
	p := Progress{Runs: len(e.runs), Elapsed: time.Since(e.start)}
	for _, rs := range e.runs {
		if rs.finished {
			p.RunsDone++
		}
		if rs.run.MPIJob != nil {
			// The operator creates the pods: a launcher and the workers.
			p.Pods += 1 + mpiWorkers(rs.run.MPIJob)
			p.Created += len(rs.pods)
			for _, cur := range rs.pods {
				p.count(cur)
			}
			continue
		}
		p.Pods += len(rs.run.Pods)
		p.Created += len(rs.created)
		for name := range rs.created {
			if cur := rs.pods[name]; cur != nil {
				p.count(cur)
			}
		}
	}
	return p
}

func (p *Progress) count(cur *corev1.Pod) {
	if cur.Spec.NodeName != "" {
		p.Scheduled++
	}
	switch cur.Status.Phase {
	case corev1.PodRunning:
		p.Running++
	case corev1.PodSucceeded:
		p.Succeeded++
	case corev1.PodFailed:
		p.Failed++
	}
}

// finishUnfinished marks the runs still going as timed out, or as
// interrupted when parent is done, with what each was waiting for.
func (e *executor) finishUnfinished(parent context.Context) {
	for _, rs := range e.runs {
		if rs.finished {
			continue
		}
		if parent.Err() != nil {
			rs.fail(Interrupted, "interrupted while "+rs.waitingFor())
		} else {
			rs.fail(TimedOut, fmt.Sprintf("timed out after %v while %s", e.o.Timeout, rs.waitingFor()))
		}
	}
}

// waitingFor describes every pod of an unfinished run.
func (rs *runState) waitingFor() string {
	if !rs.started {
		return "waiting for run " + rs.run.After + " to finish first"
	}
	if rs.run.MPIJob != nil {
		return rs.mpiWaitingFor()
	}
	var parts []string
	for _, pod := range rs.run.Pods {
		switch cur := rs.pods[pod.Name]; {
		case !rs.created[pod.Name]:
			parts = append(parts, "pod "+pod.Name+" not created (waiting for its server's IP)")
		case cur == nil:
			parts = append(parts, "pod "+pod.Name+" not seen yet")
		default:
			parts = append(parts, "pod "+pod.Name+" "+describe(cur))
		}
	}
	return "waiting for " + strings.Join(parts, "; ")
}

// describe says what a pod is doing: its phase, why it is not scheduled,
// its container's state.
func describe(p *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(string(p.Status.Phase))
	if p.Status.Phase == "" {
		b.WriteString("Pending")
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			fmt.Fprintf(&b, " (%s: %s)", c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			fmt.Fprintf(&b, ", container %s exit code %d", cs.Name, t.ExitCode)
			if t.Reason != "" {
				fmt.Fprintf(&b, " (%s)", t.Reason)
			}
			if msg := strings.TrimSpace(t.Message); msg != "" {
				fmt.Fprintf(&b, ": %s", lastLine(msg))
			}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			fmt.Fprintf(&b, ", container %s waiting: %s", cs.Name, cs.State.Waiting.Reason)
		}
	}
	return b.String()
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
