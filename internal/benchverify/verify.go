package benchverify

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/bench"
)

// Defaults of Options.
const (
	// DefaultLogBytes is how much of each container's log is read: NCCL
	// prints its INFO lines when a communicator starts, at the head of a
	// log, and a few thousand ranks' init lines fit in a few MiB.
	DefaultLogBytes = 16 << 20
	// MaxLogBytes bounds Options.LogBytes: the parse holds every pod's
	// log in memory.
	MaxLogBytes = 256 << 20
	// DefaultMaxPods bounds the pods read (a job of more is cut there,
	// and the report says so).
	DefaultMaxPods = 512
	// DefaultRequestTimeout bounds every API request, a log read included.
	DefaultRequestTimeout = 30 * time.Second
	// parallel is how many pods' logs are read at once.
	parallel = 8
	// maxTotalLogBytes bounds the logs held at once over all pods.
	maxTotalLogBytes = 1 << 30
)

// ErrNoPods is Verify's error when the selector matches no pod.
var ErrNoPods = errors.New("no pod matches")

// Options say which pods make the job and how they are read.
type Options struct {
	// Namespace and Selector (a label selector, required) pick the job's
	// pods; Container, when set, is the one container whose log is read
	// (default: every container of the pod).
	Namespace, Selector, Container string
	// LogBytes is how much of each container's log is read from its
	// start (default DefaultLogBytes, at most MaxLogBytes).
	LogBytes int64
	// MaxPods bounds the pods read (default DefaultMaxPods).
	MaxPods int
	// Profile is the fabric profile the NCCL lines are judged by
	// (bench.Profiles): on infiniband and roce-* a fallback to TCP
	// sockets fails. Without one the job's devices decide: a job whose
	// pods got RDMA devices from Railyard is expected on RDMA.
	Profile string
	// RequestTimeout bounds each API request (default
	// DefaultRequestTimeout).
	RequestTimeout time.Duration
}

func (o *Options) defaults() error {
	if o.Selector == "" {
		return errors.New("a label selector is required (the job's pods, e.g. job-name=train)")
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("selector %q: %w", o.Selector, err)
	}
	if o.Namespace == "" {
		o.Namespace = metav1.NamespaceDefault
	}
	if o.LogBytes == 0 {
		o.LogBytes = DefaultLogBytes
	}
	if o.LogBytes < 0 || o.LogBytes > MaxLogBytes {
		return fmt.Errorf("log bytes %d: want 1 to %d", o.LogBytes, MaxLogBytes)
	}
	if o.MaxPods == 0 {
		o.MaxPods = DefaultMaxPods
	}
	if o.MaxPods < 0 {
		return fmt.Errorf("max pods %d: want a positive number", o.MaxPods)
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.Profile != "" {
		if _, err := bench.ProfileNamed(o.Profile); err != nil {
			return err
		}
	}
	return nil
}

// Report is what Verify found: the job's pods with their logs and
// devices, what NCCL's lines say, and the verdicts.
type Report struct {
	Namespace string `json:"namespace"`
	Selector  string `json:"selector"`
	Pods      []Pod  `json:"pods"`
	// MorePods counts the pods beyond Options.MaxPods, not read.
	MorePods int `json:"morePods,omitempty"`
	// NCCL is what the NCCL INFO lines of every pod's log say, per host
	// (nil: no such line).
	NCCL     *bench.NCCLTransport `json:"ncclTransport,omitempty"`
	Verdicts []bench.Verdict      `json:"verdicts"`
}

// Status is the report's exit status: 0 nothing wrong, 1 warnings, 2
// failures (as doctor and fabric).
func (r Report) Status() int {
	st := 0
	for _, v := range r.Verdicts {
		switch v.Status {
		case bench.StatusFail:
			return 2
		case bench.StatusWarn:
			st = 1
		}
	}
	return st
}

// Pod is one pod of the job.
type Pod struct {
	Name  string `json:"name"`
	Node  string `json:"node,omitempty"`
	Phase string `json:"phase"`
	Logs  []Log  `json:"logs"`
	// Hosts are the NCCL hosts whose lines its logs hold.
	Hosts []string `json:"ncclHosts,omitempty"`
	// NICs and GPUs are what Railyard (and the GPU driver, through DRA)
	// gave it.
	NICs []NIC `json:"nics,omitempty"`
	GPUs []GPU `json:"gpus,omitempty"`
	// Resources are the Railyard extended resources (ResourcePrefix) its
	// containers ask for, listed when no NIC of it is known otherwise.
	Resources []string `json:"resources,omitempty"`
	// Notes say what could not be read about it.
	Notes []string `json:"notes,omitempty"`

	log []byte
}

// Log is one container's log read.
type Log struct {
	Container string `json:"container"`
	Bytes     int    `json:"bytes"`
	// Truncated: the log is longer than Options.LogBytes; only its head
	// was read.
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Verify reads the job's pods and judges them.
func Verify(ctx context.Context, c kubernetes.Interface, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	list, err := c.CoreV1().Pods(o.Namespace).List(lctx, metav1.ListOptions{LabelSelector: o.Selector})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("listing the pods (namespace %s, selector %s): %w", o.Namespace, o.Selector, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("%w namespace %s, selector %s", ErrNoPods, o.Namespace, o.Selector)
	}
	pods := slices.Clone(list.Items)
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	rep := &Report{Namespace: o.Namespace, Selector: o.Selector}
	if len(pods) > o.MaxPods {
		rep.MorePods = len(pods) - o.MaxPods
		pods = pods[:o.MaxPods]
	}
	rep.Pods = make([]Pod, len(pods))
	for i := range pods {
		p := &pods[i]
		rep.Pods[i] = Pod{Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase)}
	}
	// Every pod's logs, a few at once, each read bounded; the total held
	// is bounded too (a pod beyond it is noted, its log left unread).
	budget := &logBudget{left: maxTotalLogBytes}
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			readLogs(ctx, c, o, &pods[i], &rep.Pods[i], budget)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := newDeviceReader(c, o)
	for i := range pods {
		if err := d.read(ctx, &pods[i], &rep.Pods[i]); err != nil {
			return nil, err
		}
	}
	rep.Verdicts = judge(rep, o)
	return rep, nil
}

// logBudget is what is left of maxTotalLogBytes.
type logBudget struct {
	mu   sync.Mutex
	left int64
}

func (b *logBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left < n {
		return false
	}
	b.left -= n
	return true
}

func (b *logBudget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// readLogs reads the head of each container's log (LogBytes, which the
// API server applies; the read is bounded here too).
func readLogs(ctx context.Context, c kubernetes.Interface, o Options, p *corev1.Pod, out *Pod, budget *logBudget) {
	var names []string
	for _, ct := range p.Spec.Containers {
		if o.Container == "" || ct.Name == o.Container {
			names = append(names, ct.Name)
		}
	}
	if len(names) == 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("no container %q", o.Container))
		return
	}
	for _, name := range names {
		l := Log{Container: name}
		if !budget.take(o.LogBytes) {
			l.Error = fmt.Sprintf("not read: the logs read hold %d MiB already", maxTotalLogBytes>>20)
			out.Logs = append(out.Logs, l)
			continue
		}
		data, truncated, err := readLog(ctx, c, o, p.Name, name)
		budget.give(o.LogBytes - int64(len(data)))
		l.Bytes, l.Truncated = len(data), truncated
		if err != nil {
			l.Error = err.Error()
		}
		if truncated {
			// The cut line is dropped: it would run into the next
			// container's first line.
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		out.log = append(out.log, data...)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			out.log = append(out.log, '\n') // a log that ends mid-line
		}
		out.Logs = append(out.Logs, l)
	}
}

// readLog reads at most o.LogBytes of one container's log; truncated
// says there was more.
func readLog(ctx context.Context, c kubernetes.Interface, o Options, pod, container string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	limit := o.LogBytes + 1 // one byte more tells a cut log from one of exactly LogBytes
	rc, err := c.CoreV1().Pods(o.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("reading the log: %w", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit))
	truncated := int64(len(data)) > o.LogBytes
	if truncated {
		data = data[:o.LogBytes]
	}
	if err != nil {
		return data, truncated, fmt.Errorf("reading the log: %w", err)
	}
	return data, truncated, nil
}
