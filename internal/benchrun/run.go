package benchrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/benchplan"
)

// Defaults.
const (
	DefaultTimeout        = 15 * time.Minute
	DefaultPoll           = time.Second
	DefaultCleanupTimeout = time.Minute
	// InterruptedCleanup is how long cleanup may take once the context is
	// cancelled (Ctrl-C): the deletes are sent, their completion is not
	// awaited (the CLI exits within cli.Grace).
	InterruptedCleanup = 2 * time.Second
	collectTimeout     = 30 * time.Second
	// RequestTimeout bounds one API request (the CLI sets it as the
	// client's rest.Config Timeout).
	RequestTimeout = 30 * time.Second
	// MaxLogBytes bounds one container's collected log.
	MaxLogBytes = 64 << 20
)

// Status is how a run ended.
type Status string

// Statuses.
const (
	Succeeded   Status = "succeeded"
	Failed      Status = "failed"
	TimedOut    Status = "timed-out"
	Interrupted Status = "interrupted"
)

// Options configure Execute.
type Options struct {
	// Timeout bounds the whole run: creating the objects, waiting for
	// every run and collecting the logs (the last quarter of it, at most
	// 30 s, is kept for collecting); cleanup then has CleanupTimeout.
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// Poll is how often pod states are read; 0 means DefaultPoll.
	Poll time.Duration
	// Keep leaves every object in the cluster (for debugging).
	Keep bool
	// CleanupTimeout bounds deleting the objects and waiting until they
	// are gone; 0 means DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// Parse are the parser options of the result logs.
	Parse bench.Options
	// Progress, when set, is called after every poll.
	Progress func(Progress)
}

// Progress counts the plan's pods and runs.
type Progress struct {
	Pods, Created, Scheduled, Running, Succeeded, Failed int
	Runs, RunsDone                                       int
	Elapsed                                              time.Duration
}

// Outcome is what a plan's runs did.
type Outcome struct {
	Runs []RunOutcome
	// Created are the objects the run created ("pod/ns/name"); Kept says
	// they were left in the cluster (Options.Keep).
	Created []string
	Kept    bool
	// CleanupErr is set when an object could not be deleted or was not
	// gone within the cleanup timeout.
	CleanupErr  error
	Interrupted bool
}

// Failed counts the runs that did not succeed.
func (o Outcome) Failed() int {
	n := 0
	for _, r := range o.Runs {
		if r.Status != Succeeded {
			n++
		}
	}
	return n
}

// Results are the runs' parsed results under their scenario (the variant)
// with their node counts, failed runs included as failed results.
func (o Outcome) Results() []bench.Labelled {
	out := make([]bench.Labelled, 0, len(o.Runs))
	for _, r := range o.Runs {
		out = append(out, bench.Labelled{Scenario: r.Scenario, Result: r.Result, Nodes: r.Nodes})
	}
	return out
}

// RunOutcome is one run's end.
type RunOutcome struct {
	Name, Test, Scenario string
	Status               Status
	// Reason says why a run did not succeed (the pod's exit code and
	// reason, what it was waiting for at the timeout, the parser's error).
	Reason string
	// ResultPod is "ns/name" of the result pod (an MPIJob's launcher pod;
	// "" when it was never seen).
	ResultPod string
	// Result is the parsed log of the result pod; for a run that did not
	// succeed OK is false and Error is Reason.
	Result bench.Result
	// Logs are every pod's collected log, by pod name.
	Logs map[string][]byte
	// Nodes is an MPIJob run's number of workers, one per node as bench
	// plan places them (the scaling table orders training runs by it); 0
	// for other runs.
	Nodes int
	// ServerVia says which address the client was given for its server
	// and where it came from (a run whose client bench run starts once
	// its server runs); "" for other runs.
	ServerVia string
}

// runState follows one run while it executes.
type runState struct {
	run      Run
	logs     map[string][]byte
	logErrs  []string
	created  map[string]bool // pod names created
	pods     map[string]*corev1.Pod
	status   Status
	reason   string
	finished bool
	started  bool // its objects are being created (a run may wait for another)
	// An MPIJob run's state: the MPIJob as last read, its launcher pod's
	// name (the newest), and whether its logs were read already (when it
	// finished, before the operator deletes its workers).
	job       *unstructured.Unstructured
	launcher  string
	collected bool
	// serverVia is where the client's server address came from
	// (RunOutcome.ServerVia); serverRunning when each server pod was
	// first seen running with an IP.
	serverVia     string
	serverRunning map[string]time.Time
}

// Execute creates the plan's objects, waits for every run, collects logs,
// parses results and cleans up. It returns an error only when the plan
// could not be started at all (an object already exists, the API server
// refuses the first object); what it created is then deleted too. The
// failure of one run is in its RunOutcome and never stops the others.
func Execute(ctx context.Context, c Cluster, p Plan, o Options) (Outcome, error) {
	o = o.withDefaults()
	start := time.Now()
	e := &executor{c: c, o: o, start: start}
	for _, r := range p.Runs {
		e.runs = append(e.runs, &runState{run: r, created: map[string]bool{}, pods: map[string]*corev1.Pod{},
			serverRunning: map[string]time.Time{}})
	}
	deadline := start.Add(o.Timeout)
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := e.createInitial(runCtx)
	if err == nil {
		waitCtx, cancelWait := context.WithDeadline(runCtx, deadline.Add(-min(o.Timeout/4, collectTimeout)))
		e.wait(waitCtx)
		cancelWait()
		e.finishUnfinished(ctx)
		if ctx.Err() == nil {
			e.collect(runCtx)
		}
	}
	out := Outcome{Created: e.createdNames(), Interrupted: ctx.Err() != nil}
	if o.Keep && err == nil {
		out.Kept = true
	} else {
		out.CleanupErr = e.cleanup(ctx)
	}
	if err != nil {
		return out, err
	}
	for _, rs := range e.runs {
		out.Runs = append(out.Runs, rs.outcome(o.Parse))
	}
	return out, nil
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = DefaultCleanupTimeout
	}
	return o
}

type created struct{ kind, ns, name string }

type executor struct {
	c       Cluster
	o       Options
	start   time.Time
	runs    []*runState
	created []created
}

func (e *executor) createdNames() []string {
	out := make([]string, 0, len(e.created))
	for _, c := range e.created {
		out = append(out, fmt.Sprintf("%s/%s/%s", strings.ToLower(c.kind), c.ns, c.name))
	}
	return out
}

// createInitial starts every run that waits for no other run. An object
// that exists already, or an API server that refuses the very first
// object, stops the whole plan; any other refusal fails that run only.
func (e *executor) createInitial(ctx context.Context) error {
	for _, rs := range e.runs {
		if rs.run.After != "" {
			continue
		}
		if err := e.startRun(ctx, rs); err != nil {
			return err
		}
	}
	return nil
}

// startRun creates a run's ResourceClaimTemplates, its Services and every
// pod that waits for no server (or its MPIJob).
func (e *executor) startRun(ctx context.Context, rs *runState) error {
	rs.started = true
	for _, t := range rs.run.ClaimTemplates {
		if ok, err := e.create(rs, kindClaimTemplate, t.Namespace, t.Name, e.c.CreateClaimTemplate(ctx, t.DeepCopy())); !ok {
			return err
		}
	}
	if rs.run.MPIJob != nil {
		return e.createMPIJob(ctx, rs)
	}
	for _, svc := range rs.run.Services {
		if ok, err := e.create(rs, kindService, svc.Namespace, svc.Name, e.c.CreateService(ctx, svc.DeepCopy())); !ok {
			return err
		}
	}
	for _, pod := range rs.run.Pods {
		if pod.Annotations[benchplan.AnnotationServerPod] != "" {
			continue
		}
		if err := e.createPod(ctx, rs, pod.DeepCopy()); err != nil {
			return err
		}
		if rs.finished {
			return nil
		}
	}
	return nil
}

// create records an object a run created (createErr nil) and reports
// true; otherwise it fails the run, or returns the error that stops the
// whole plan (fatal), and reports false.
func (e *executor) create(rs *runState, kind, ns, name string, createErr error) (bool, error) {
	if createErr != nil {
		if err := e.fatal(createErr, kind, ns, name); err != nil {
			return false, err
		}
		rs.fail(Failed, fmt.Sprintf("create %s %s: %v", strings.ToLower(kind), name, createErr))
		return false, nil
	}
	e.created = append(e.created, created{kind, ns, name})
	return true, nil
}

// fatal returns a non-nil error when err stops the whole plan.
func (e *executor) fatal(err error, kind, ns, name string) error {
	switch {
	case apierrors.IsAlreadyExists(err) && kind == kindMPIJob:
		return fmt.Errorf("%s %s/%s exists already (left by an earlier run with --keep? delete it: kubectl delete mpijob -n %s %s): %w",
			kind, ns, name, ns, name, err)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s %s/%s exists already (left by an earlier run with --keep? delete it, or the run's objects: kubectl delete pod,service,resourceclaimtemplate -n %s -l %s): %w",
			kind, ns, name, ns, benchplan.LabelRun, err)
	case len(e.created) == 0:
		return fmt.Errorf("create %s %s/%s: %w", kind, ns, name, err)
	case isContextErr(err):
		return err
	}
	return nil
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (e *executor) createPod(ctx context.Context, rs *runState, pod *corev1.Pod) error {
	ok, err := e.create(rs, kindPod, pod.Namespace, pod.Name, e.c.CreatePod(ctx, pod))
	if ok {
		rs.created[pod.Name] = true
	}
	return err
}

func (rs *runState) fail(s Status, reason string) {
	if rs.finished {
		return
	}
	rs.status, rs.reason, rs.finished = s, reason, true
}
