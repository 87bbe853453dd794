package top

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/kubeclient"
	"github.com/railyard-io/railyard/internal/rdmacounter"
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

// agentScrape is one agent's /metrics text, or why there is none.
type agentScrape struct {
	pod, node string
	text      []byte
	err       error
}

// scrapeFunc reads every agent's /metrics once.
type scrapeFunc func(ctx context.Context) ([]agentScrape, error)

// apiScraper reads each running agent pod's /metrics through the API
// server's pod proxy, as Prometheus scrapes the pods: no port-forward, no
// access to the nodes.
func apiScraper(client kubernetes.Interface, o options) scrapeFunc {
	return func(ctx context.Context) ([]agentScrape, error) {
		pods, err := client.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{LabelSelector: o.selector})
		if err != nil {
			return nil, fmt.Errorf("listing the agents (namespace %s, selector %s): %w", o.namespace, o.selector, err)
		}
		var out []agentScrape
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			s := agentScrape{pod: p.Name, node: p.Spec.NodeName}
			rc, err := client.CoreV1().Pods(o.namespace).ProxyGet("http", p.Name, fmt.Sprint(o.port), "/metrics", nil).Stream(ctx)
			if err == nil {
				s.text, err = io.ReadAll(io.LimitReader(rc, maxScrape+1))
				rc.Close()
				if err == nil && len(s.text) > maxScrape {
					err = fmt.Errorf("more than %d MiB of metrics", maxScrape>>20)
				}
			}
			if err != nil {
				s.err = fmt.Errorf("scraping %s on %s: %w", p.Name, p.Spec.NodeName, err)
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no running agent pod in namespace %s with labels %s", o.namespace, o.selector)
		}
		return out, nil
	}
}

// portID names one port of one device of one node.
type portID struct{ node, nic, port, pci string }

// holder is who holds a port's device, from its series' labels.
type holder struct {
	rail, namespace, pod, job string
}

// portCounters are one port's exported counters: its holder, and each
// counter's total by its index in rdmacounter.Counters.
type portCounters struct {
	holder
	values map[int]float64
}

// snapshot is every agent's RDMA counters at one time.
type snapshot struct {
	at    time.Time
	ports map[portID]*portCounters
}

// parseScrape adds the RDMA counter series of one agent's /metrics text to
// s: railyard_rdma_<counter>_total of the counters rdmacounter knows.
func parseScrape(text []byte, s *snapshot) error {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return fmt.Errorf("parsing metrics: %w", err)
	}
	for name, f := range fams {
		counter := strings.TrimSuffix(strings.TrimPrefix(name, rdmastats.Prefix), "_total")
		i := rdmacounter.Index(counter)
		if !strings.HasPrefix(name, rdmastats.Prefix) || i < 0 {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			id := portID{node: l["node"], nic: l["nic"], port: l["port"], pci: l["pci"]}
			pc, ok := s.ports[id]
			if !ok {
				pc = &portCounters{holder: holder{rail: l["rail"], namespace: l["namespace"], pod: l["pod"], job: l["job_name"]}, values: map[int]float64{}}
				s.ports[id] = pc
			}
			pc.values[i] = m.GetCounter().GetValue()
		}
	}
	return nil
}

// take scrapes every agent into a snapshot; notes says which agents could
// not be read (the others still count).
func take(ctx context.Context, scrape scrapeFunc) (snapshot, []string, error) {
	s := snapshot{at: time.Now(), ports: map[portID]*portCounters{}}
	agents, err := scrape(ctx)
	if err != nil {
		return s, nil, err
	}
	var notes []string
	for _, a := range agents {
		if a.err == nil {
			a.err = parseScrape(a.text, &s)
		}
		if a.err != nil {
			notes = append(notes, a.err.Error())
		}
	}
	return s, notes, nil
}

// jobRow is one line of the cluster view: a job's devices added up, or
// with --job one port of that job.
type jobRow struct {
	job, node, dev, port, rail, pods string
	devices                          int
	sum                              rdmacounter.Summary
}

// jobOf is the group a held port belongs to: namespace/job, or
// namespace/pod for a pod that names no job.
func jobOf(h holder) string {
	return h.namespace + "/" + cmp.Or(h.job, "pod:"+h.pod)
}

// jobAcc is a row being added up, with the nodes, rails and pods its
// ports were on.
type jobAcc struct {
	row                jobRow
	nodes, rails, pods map[string]bool
}

// clusterFrame computes the rates between two snapshots of held devices:
// a row per job (its ports on every node added up), or, when o.job is
// set, a row per port of that job. A counter that went down (an agent
// restarted: the exported totals start again) marks its row reset.
func clusterFrame(prev, cur snapshot, o options) []jobRow {
	dt := cur.at.Sub(prev.at).Seconds()
	if dt <= 0 {
		return nil
	}
	accs := map[string]*jobAcc{}
	for id, c := range cur.ports {
		p, ok := prev.ports[id]
		if !ok || c.pod == "" || o.job != "" && c.job != o.job {
			continue
		}
		var rs []rdmacounter.Rate
		for i, v := range c.values {
			before, ok := p.values[i]
			if !ok {
				continue
			}
			r := rdmacounter.Rate{Index: i, PerSecond: (v - before) / dt}
			if v < before {
				r.PerSecond, r.Event = 0, rdmacounter.Reset
			}
			rs = append(rs, r)
		}
		if len(rs) == 0 {
			continue
		}
		slices.SortFunc(rs, func(a, b rdmacounter.Rate) int { return cmp.Compare(a.Index, b.Index) })
		job, rail := jobOf(c.holder), cmp.Or(c.rail, "-")
		key := job
		if o.job != "" {
			key = strings.Join([]string{id.node, id.nic, id.port, id.pci}, "|")
		}
		acc, ok := accs[key]
		if !ok {
			acc = &jobAcc{row: jobRow{job: job, node: id.node, dev: id.nic, port: id.port, rail: rail, pods: c.namespace + "/" + c.pod},
				nodes: map[string]bool{}, rails: map[string]bool{}, pods: map[string]bool{}}
			accs[key] = acc
		}
		acc.row.devices++
		acc.row.sum = acc.row.sum.Add(rdmacounter.Summarize(rs))
		acc.nodes[id.node], acc.rails[rail], acc.pods[c.pod] = true, true, true
	}
	out := make([]jobRow, 0, len(accs))
	for _, acc := range accs {
		r := acc.row
		if o.job == "" {
			r.node = strings.Join(slices.Sorted(maps.Keys(acc.nodes)), ",")
			r.rail = strings.Join(slices.Sorted(maps.Keys(acc.rails)), ",")
			r.pods = fmt.Sprint(len(acc.pods))
		}
		out = append(out, r)
	}
	less := sorters[o.sortBy]
	slices.SortStableFunc(out, func(a, b jobRow) int {
		return cmp.Or(less(row{sum: a.sum}, row{sum: b.sum}), strings.Compare(a.job, b.job), strings.Compare(a.node, b.node),
			strings.Compare(a.dev, b.dev), strings.Compare(a.port, b.port))
	})
	return out
}

// renderCluster writes one frame of the cluster view.
func renderCluster(w io.Writer, rows []jobRow, notes []string, o options) error {
	what := "job"
	if o.job != "" {
		what = "port"
	}
	if len(rows) != 1 {
		what += "s"
	}
	if o.job != "" {
		what += " of job " + o.job
	}
	head := fmt.Sprintf("railyard top --cluster: %d %s, every %s, sorted by %s", len(rows), what, o.interval, o.sortBy)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if o.job == "" {
		fmt.Fprintln(tw, "PODS\tDEVICES\tTX/s\tRX/s\tERR/s\tCONG/s\t  JOB\t  NODES\t  RAILS")
	} else {
		fmt.Fprintln(tw, "PORT\tRAIL\tTX/s\tRX/s\tERR/s\tCONG/s\t  NODE\t  DEVICE\t  POD")
	}
	for _, r := range rows {
		tx, rx, errs := cells(r.sum)
		if o.job == "" {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t  %s\t  %s\t  %s\n", r.pods, r.devices, tx, rx, errs, num(r.sum.Congestion), r.job, r.node, r.rail)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t  %s\t  %s\t  %s\n", r.port, r.rail, tx, rx, errs, num(r.sum.Congestion), r.node, r.dev, r.pods)
		}
	}
	if _, err := fmt.Fprintln(w, head); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, "  not counted: "+n); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// runCluster is `top --cluster`: every agent's counters through the API
// server, two scrapes --interval apart per frame.
func runCluster(ctx context.Context, s iostreams.Streams, o options, scrape scrapeFunc) error {
	if scrape == nil {
		client, err := kubeclient.New(o.kubeconfig, 30*time.Second)
		if err != nil {
			return err
		}
		scrape = apiScraper(client, o)
	}
	prev, _, err := take(ctx, scrape)
	if err != nil {
		return err
	}
	clear := isTerminal(s.Out)
	for i := 0; o.iterations == 0 || i < o.iterations; i++ {
		t := time.NewTimer(o.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		cur, notes, err := take(ctx, scrape)
		if err != nil {
			return err
		}
		if clear {
			fmt.Fprint(s.Out, "\x1b[H\x1b[2J")
		}
		if err := renderCluster(s.Out, clusterFrame(prev, cur, o), notes, o); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}
