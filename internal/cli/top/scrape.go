package top

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/rdmastats"
)

// maxScrape bounds one agent's /metrics text: a 2,048-VF node's is about
// 9 MB (BENCHMARKS.md).
const maxScrape = 64 << 20

// Cluster mode's defaults: the chart's namespace, agent labels and port.
const (
	defaultNamespace = "railyard-system"
	defaultSelector  = "app.kubernetes.io/name=railyard,app.kubernetes.io/component=agent"
	defaultPort      = 9410
)

// agentScrape is one agent's /metrics text and when it answered, or why
// there is none.
type agentScrape struct {
	pod, node string
	text      []byte
	// at is when the agent's answer began: it reads its counters when
	// asked and answers once they are read, so the values are of about
	// that time. Each agent has its own: one agent slower than the others
	// never skews their rates.
	at  time.Time
	err error
}

// scrapeFunc reads every agent's /metrics once.
type scrapeFunc func(ctx context.Context) ([]agentScrape, error)

// scraper reads each running agent pod's /metrics through the API
// server's pod proxy, as Prometheus scrapes the pods (no port-forward, no
// access to the nodes): every agent at once, each bounded by timeout, so
// that one dead node costs a frame at most timeout, not a client timeout
// per agent.
type scraper struct {
	client  kubernetes.Interface
	o       options
	timeout time.Duration    // one agent's bound (--interval)
	now     func() time.Time // the clock each answer is stamped with
}

// scrape implements scrapeFunc.
func (sc scraper) scrape(ctx context.Context) ([]agentScrape, error) {
	pods, err := sc.client.CoreV1().Pods(sc.o.namespace).List(ctx, metav1.ListOptions{LabelSelector: sc.o.selector})
	if err != nil {
		return nil, fmt.Errorf("listing the agents (namespace %s, selector %s): %w", sc.o.namespace, sc.o.selector, err)
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
		}
	}
	if len(running) == 0 {
		return nil, fmt.Errorf("no running agent pod in namespace %s with labels %s", sc.o.namespace, sc.o.selector)
	}
	out := make([]agentScrape, len(running))
	var wg sync.WaitGroup
	for i := range running {
		wg.Go(func() { out[i] = sc.one(ctx, &running[i]) })
	}
	wg.Wait()
	return out, nil
}

// one scrapes one agent within sc.timeout.
func (sc scraper) one(ctx context.Context, p *corev1.Pod) agentScrape {
	s := agentScrape{pod: p.Name, node: p.Spec.NodeName}
	ctx, cancel := context.WithTimeout(ctx, sc.timeout)
	defer cancel()
	rc, err := sc.client.CoreV1().Pods(sc.o.namespace).ProxyGet("http", p.Name, fmt.Sprint(sc.o.port), "/metrics", nil).Stream(ctx)
	s.at = sc.now()
	if err == nil {
		s.text, err = io.ReadAll(io.LimitReader(rc, maxScrape+1))
		rc.Close()
		if err == nil && len(s.text) > maxScrape {
			err = fmt.Errorf("more than %d MiB of metrics", maxScrape>>20)
		}
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s: %w", sc.timeout, err)
		}
		s.err = fmt.Errorf("scraping %s: %w", p.Name, err)
	}
	return s
}

// portID names one port of one device of one node.
type portID struct{ node, nic, port, pci string }

// holder is who holds a port's device, from its series' labels.
type holder struct {
	rail, namespace, pod, job string
}

// portCounters are one port's exported counters: its holder, each
// counter's total by its index in rdmacounter.Counters, and when its
// agent answered.
type portCounters struct {
	holder
	values map[int]float64
	at     time.Time
}

// snapshot is every agent's RDMA counters, each at its own time, and
// what could not be counted.
type snapshot struct {
	ports map[portID]*portCounters
	// missing are the nodes whose agent could not be read, and why.
	missing map[string]string
	// notes say what else was not counted, once each.
	notes []string
}

func newSnapshot() snapshot {
	return snapshot{ports: map[portID]*portCounters{}, missing: map[string]string{}}
}

// take scrapes every agent into a snapshot: an agent that cannot be read
// makes its node missing (the others still count).
func take(ctx context.Context, scrape scrapeFunc) (snapshot, error) {
	s := newSnapshot()
	agents, err := scrape(ctx)
	if err != nil {
		return s, err
	}
	for _, a := range agents {
		if a.err == nil {
			a.err = parseScrape(a, &s)
		}
		if a.err != nil {
			s.missing[a.node] = a.err.Error()
		}
	}
	return s, nil
}

// parseScrape adds the RDMA counter series of one agent's /metrics text to
// s: the series of rdmastats.MetricName of the counters rdmacounter knows
// (rdmastats.CounterIndex), labelled as rdmastats labels them. Only
// what the agent can say is counted: a series labelled for another node
// than the agent pod's, one that is not a counter (a gauge), or a value
// that is no count (NaN, infinite, negative) is left out, and a note
// says so; so does the agent's gauge of ports it could not read.
func parseScrape(a agentScrape, s *snapshot) error {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(a.text))
	if err != nil {
		return fmt.Errorf("scraping %s: parsing metrics: %w", a.pod, err)
	}
	foreign, notCounter, notCount := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		f := fams[name]
		if name == rdmastats.ReadErrors {
			for _, m := range f.GetMetric() {
				if v := m.GetGauge().GetValue(); v > 0 && labels(m.GetLabel())[rdmastats.LabelNode] == a.node {
					s.notes = append(s.notes, fmt.Sprintf("%s: %v ports' counters could not all be read (their rates show as -)", a.node, v))
				}
			}
			continue
		}
		i := rdmastats.CounterIndex(name)
		if i < 0 {
			continue
		}
		for _, m := range f.GetMetric() {
			l := labels(m.GetLabel())
			if l[rdmastats.LabelNode] != a.node {
				foreign[l[rdmastats.LabelNode]] = true
				continue
			}
			if m.GetCounter() == nil {
				notCounter[name] = true
				continue
			}
			v := m.GetCounter().GetValue()
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				notCount[name] = true
				continue
			}
			id := portID{node: l[rdmastats.LabelNode], nic: l[rdmastats.LabelNIC], port: l[rdmastats.LabelPort], pci: l[rdmastats.LabelPCI]}
			pc, ok := s.ports[id]
			if !ok {
				pc = &portCounters{holder: holder{rail: l[rdmastats.LabelRail], namespace: l[rdmastats.LabelNamespace], pod: l[rdmastats.LabelPod], job: l[rdmastats.LabelJob]}, values: map[int]float64{}, at: a.at}
				s.ports[id] = pc
			}
			pc.values[i] = v
		}
	}
	if len(foreign) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%s on %s: series labelled for another node (%s): not counted", a.pod, a.node, strings.Join(slices.Sorted(maps.Keys(foreign)), ", ")))
	}
	if len(notCounter) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%s on %s: not counters (%s): not counted", a.pod, a.node, strings.Join(slices.Sorted(maps.Keys(notCounter)), ", ")))
	}
	if len(notCount) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("%s on %s: values that are no count (NaN, infinite or negative) in %s: not counted", a.pod, a.node, strings.Join(slices.Sorted(maps.Keys(notCount)), ", ")))
	}
	return nil
}

// labels are a series' labels (its label pairs) by name.
func labels[P interface {
	GetName() string
	GetValue() string
}](pairs []P) map[string]string {
	l := make(map[string]string, len(pairs))
	for _, lp := range pairs {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}
