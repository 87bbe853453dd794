package top

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/rdmacounter"
)

// proxyAnswer is what the API server's pod proxy does for one agent pod
// when asked for its /metrics.
type proxyAnswer func(ctx context.Context) (io.ReadCloser, error)

// proxyResponse is client-go's ResponseWrapper over a proxyAnswer.
type proxyResponse struct{ stream proxyAnswer }

var _ restclient.ResponseWrapper = proxyResponse{}

func (r proxyResponse) Stream(ctx context.Context) (io.ReadCloser, error) { return r.stream(ctx) }

func (r proxyResponse) DoRaw(ctx context.Context) ([]byte, error) {
	rc, err := r.stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// fakeAgents is client-go's fake clientset with a running agent pod
// "agent-<node>" on each node of answers, answering as said.
func fakeAgents(answers map[string]proxyAnswer) *fake.Clientset {
	var objs []runtime.Object
	for node := range answers {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "agent-" + node, Namespace: defaultNamespace,
				Labels: map[string]string{"app.kubernetes.io/name": "railyard", "app.kubernetes.io/component": "agent"}},
			Spec:   corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	c := fake.NewClientset(objs...)
	c.AddProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		node := strings.TrimPrefix(a.(k8stesting.ProxyGetAction).GetName(), "agent-")
		return true, proxyResponse{answers[node]}, nil
	})
	return c
}

// tickingClock is a clock a second further at each reading.
func tickingClock(start time.Time) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// Every agent is asked at once, each bounded by the timeout (--interval):
// node-a's and node-b's agents answer only once both were asked (one
// after the other, the first would wait for the second, 10 s, and fail),
// and node-c's never answers: its scrape ends at the bound, says so, and
// its node is missing from the snapshot while the others count. Each
// answer is stamped with its own reading of the clock.
func TestScraperAsksEveryAgentAtOnceWithinTheInterval(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	asked := 0
	both := make(chan struct{})
	together := func(text string) proxyAnswer {
		return func(ctx context.Context) (io.ReadCloser, error) {
			mu.Lock()
			if asked++; asked == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
				return io.NopCloser(strings.NewReader(text)), nil
			case <-time.After(10 * time.Second):
				return nil, errors.New("the agents were not asked at once")
			}
		}
	}
	dead := func(ctx context.Context) (io.ReadCloser, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	client := fakeAgents(map[string]proxyAnswer{"node-a": together("# a\n"), "node-b": together("# b\n"), "node-c": dead})
	sc := scraper{client: client, o: options{namespace: defaultNamespace, selector: defaultSelector, port: defaultPort},
		timeout: 200 * time.Millisecond, now: tickingClock(time.Unix(1000, 0))}
	got, err := sc.scrape(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b agentScrape) int { return strings.Compare(a.node, b.node) })
	if len(got) != 3 {
		t.Fatalf("%d agents scraped, want 3: %+v", len(got), got)
	}
	if got[0].err != nil || string(got[0].text) != "# a\n" || got[1].err != nil || string(got[1].text) != "# b\n" {
		t.Errorf("node-a and node-b: %+v, %+v; want both read", got[0], got[1])
	}
	if err := got[2].err; err == nil || !strings.Contains(err.Error(), "scraping agent-node-c: no answer within 200ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("node-c: %v, want no answer within 200ms", err)
	}
	stamps := map[time.Time]bool{}
	for _, a := range got {
		if a.at.Before(time.Unix(1001, 0)) {
			t.Errorf("%s: answer stamped %v, not by the clock", a.node, a.at)
		}
		stamps[a.at] = true
	}
	if len(stamps) != 3 {
		t.Errorf("answers stamped %v: want one time each", stamps)
	}

	s, err := take(context.Background(), sc.scrape)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"node-c"}, slices.Sorted(maps.Keys(s.missing))); diff != "" {
		t.Errorf("missing nodes (-want +got):\n%s", diff)
	}
}

// Each port's rates are over its own agent's two answers: node-b's agent
// answered 4 s after node-a's the first time and on time the second, and
// both ports sent 1000 MiB in the second between their agent's answers.
// A single time for all agents showed node-a's 1000 MiB/s as 200 MiB/s
// (1000 MiB over the 5 s between the frame's two starts) and node-b's
// as 1000 MiB over 1 s only by chance.
func TestClusterRatesUseEachAgentsTime(t *testing.T) {
	t.Parallel()
	a, b := twoNodeJob(t)
	t0 := time.Unix(1000, 0)
	prev := newSnapshot()
	for _, ans := range []agentScrape{a.answer(t, t0), b.answer(t, t0.Add(4*time.Second))} {
		if err := parseScrape(ans, &prev); err != nil {
			t.Fatal(err)
		}
	}
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 250 << 20}) // 1000 MiB in 4-byte words
	b.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 250 << 20})
	cur := newSnapshot()
	for _, ans := range []agentScrape{a.answer(t, t0.Add(time.Second)), b.answer(t, t0.Add(5*time.Second))} {
		if err := parseScrape(ans, &cur); err != nil {
			t.Fatal(err)
		}
	}
	rows, _, _ := clusterFrame(prev, cur, options{sortBy: "traffic", job: "ml/llama"})
	got := map[string]string{}
	for _, r := range rows {
		got[r.node+" "+r.dev] = cells(r.sum).tx
	}
	want := map[string]string{"node-a mlx5_3": "1000.0MiB", "node-a mlx5_4": "0B", "node-b mlx5_3": "1000.0MiB"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TX/s per port (-want +got):\n%s", diff)
	}
}

// What an agent says is counted only where it can be: series labelled
// for another node than the agent pod's are not counted (an agent cannot
// speak for another node), and the job_name and other labels, printed
// in the table, come out with their terminal escapes visible.
func TestParseScrapeKeepsToItsNodeAndEscapesLabels(t *testing.T) {
	t.Parallel()
	hostile := "llama\x1b]0;pwned\x07\u202eevil\u009b2J"
	a := newAgentNode(t, "node-a", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w0\x1b[31m", Container: "c", Job: hostile},
	})
	liar := newAgentNode(t, "node-b", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w9", Container: "c", Job: "llama"},
	})
	t0 := time.Unix(1000, 0)
	snapAt := func(at time.Time) snapshot {
		s := newSnapshot()
		// node-a's agent serves its own series and node-b's.
		if err := parseScrape(agentScrape{pod: "agent-a", node: "node-a", text: served(t, a, liar), at: at}, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	prev := snapAt(t0)
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1 << 20})
	cur := snapAt(t0.Add(time.Second))
	for id := range cur.ports {
		if id.node != "node-a" {
			t.Errorf("a series of %s counted from node-a's agent", id.node)
		}
	}
	rows, name, notes := clusterFrame(prev, cur, options{sortBy: "traffic"})
	var out bytes.Buffer
	if err := renderCluster(&out, rows, name, frameNotes(prev, cur, notes), options{sortBy: "traffic", interval: time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if strings.ContainsAny(out.String(), "\x1b\x07\u202e\u009b") {
		t.Errorf("the frame holds terminal escapes:\n%q", out.String())
	}
	for _, want := range []string{`ml/llama\x1b]0;pwned\x07\u202eevil\x9b2J`, "agent-a on node-a: series labelled for another node (node-b): not counted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the frame lacks %q", want)
		}
	}
	if len(rows) != 1 || rows[0].pods != "1" {
		t.Errorf("rows %+v, want node-a's pod's job alone", rows)
	}
}

// served is what one agent serves when its registry holds the series of
// several exporters (one of them speaking for another node).
func served(t *testing.T, nodes ...*agentNode) []byte {
	t.Helper()
	var gs prometheus.Gatherers
	for _, n := range nodes {
		gs = append(gs, n.reg)
	}
	mfs, err := gs.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// A rate top has no value for shows as "-", never as 0: a port with no
// receive series, a gauge where a counter is expected, a NaN or infinite
// value; each is said once under the header, as is the agent's count of
// ports it could not read.
func TestClusterShowsUnknownAsDash(t *testing.T) {
	t.Parallel()
	const series = `{node="node-a",nic="mlx5_3",port="1",pci="0000:18:00.1",namespace="ml",pod="w0",job_name="llama"}`
	text := func(tx, rcvErr string) []byte {
		return []byte("# TYPE railyard_rdma_port_transmit_bytes_total counter\n" +
			"railyard_rdma_port_transmit_bytes_total" + series + " " + tx + "\n" +
			"# TYPE railyard_rdma_port_receive_errors_total gauge\n" +
			"railyard_rdma_port_receive_errors_total" + series + " " + rcvErr + "\n" +
			"# TYPE railyard_rdma_out_of_buffer_total counter\n" +
			"railyard_rdma_out_of_buffer_total" + series + " NaN\n" +
			"# TYPE railyard_rdma_cnp_sent_total counter\n" +
			"railyard_rdma_cnp_sent_total" + series + " +Inf\n" +
			"# TYPE railyard_rdma_port_transmit_packets_total counter\n" +
			"railyard_rdma_port_transmit_packets_total" + series + " -5\n" +
			"# TYPE railyard_rdma_counter_read_errors gauge\n" +
			`railyard_rdma_counter_read_errors{node="node-a"} 2` + "\n")
	}
	t0 := time.Unix(1000, 0)
	prev, cur := newSnapshot(), newSnapshot()
	if err := parseScrape(agentScrape{pod: "agent-a", node: "node-a", text: text("1000", "3"), at: t0}, &prev); err != nil {
		t.Fatal(err)
	}
	if err := parseScrape(agentScrape{pod: "agent-a", node: "node-a", text: text("3000", "9"), at: t0.Add(2 * time.Second)}, &cur); err != nil {
		t.Fatal(err)
	}
	o := options{sortBy: "traffic", interval: 2 * time.Second, job: "ml/llama"}
	rows, name, notes := clusterFrame(prev, cur, o)
	if len(rows) != 1 {
		t.Fatalf("rows %+v, want the one port", rows)
	}
	if diff := cmp.Diff(rowCells{tx: "1000B", rx: "-", txp: "-", rxp: "-", errs: "-", cong: "-"}, cells(rows[0].sum), cmp.AllowUnexported(rowCells{})); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := renderCluster(&out, rows, name, frameNotes(prev, cur, notes), o); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{
		"agent-a on node-a: not counters (railyard_rdma_port_receive_errors_total): not counted",
		"agent-a on node-a: values that are no count (NaN, infinite or negative) in railyard_rdma_cnp_sent_total, railyard_rdma_out_of_buffer_total, railyard_rdma_port_transmit_packets_total: not counted",
		"node-a: 2 ports' counters could not all be read (their rates show as -)",
	} {
		if n := strings.Count(out.String(), want); n != 1 {
			t.Errorf("%q said %d times, want once", want, n)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if row := lines[len(lines)-1]; strings.Contains(row, "NaN") || strings.Contains(row, "Inf") {
		t.Errorf("the row prints a value that is no count: %s", row)
	}
}
