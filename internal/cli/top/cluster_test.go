package top

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/rdmastats"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// agentNode is one node as its agent exports it: a generated small node
// with mlx5's counter files, its devices held as owners says, and the
// agent's own exporter (rdmastats) over them.
type agentNode struct {
	name, root string
	reg        *prometheus.Registry
}

func newAgentNode(t *testing.T, name string, owners map[string]rdmacounter.Owner) *agentNode {
	t.Helper()
	root, devs := countingNode(t, owners)
	reg := prometheus.NewRegistry()
	reg.MustRegister(rdmastats.New(sysfs.New(root), name, func() []rdmacounter.Device { return devs }))
	return &agentNode{name: name, root: root, reg: reg}
}

// metrics is the node's /metrics text, as the agent serves it.
func (n *agentNode) metrics(t *testing.T) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s /metrics: %d %s", n.name, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func (n *agentNode) advance(t *testing.T, rdma string, by map[string]uint64) {
	t.Helper()
	if err := fakesysfs.AdvanceCounters(n.root, rdma, 1, fakesysfs.MLX5, by); err != nil {
		t.Fatal(err)
	}
}

// twoNodeJob: job llama's pods w0 (two VFs on node-a) and w1 (one on
// node-b), and a pod of no job, solo, on node-b.
func twoNodeJob(t *testing.T) (a, b *agentNode) {
	a = newAgentNode(t, "node-a", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w0", Container: "c", Job: "llama"},
		"0000:2a:00.1": {Namespace: "ml", Pod: "w0", Container: "c", Job: "llama"},
	})
	b = newAgentNode(t, "node-b", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w1", Container: "c", Job: "llama"},
		"0000:2a:00.1": {Namespace: "dev", Pod: "solo", Container: "c"},
	})
	return a, b
}

// answer is the node's agent answering at at.
func (n *agentNode) answer(t *testing.T, at time.Time) agentScrape {
	t.Helper()
	return agentScrape{pod: "agent-" + n.name, node: n.name, text: n.metrics(t), at: at}
}

// snap is the nodes' agents all answering at at.
func snap(t *testing.T, at time.Time, nodes ...*agentNode) snapshot {
	t.Helper()
	s := newSnapshot()
	for _, n := range nodes {
		if err := parseScrape(n.answer(t, at), &s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Two scrapes of two agents a second apart, read back from what their
// exporters serve: a row per job with its pods' devices on both nodes
// added up (bytes from the PMA's words), a pod without a job on its own
// row, devices no pod holds left out; --job gives that job's ports.
func TestClusterFrameAddsUpAJobAcrossNodes(t *testing.T) {
	t.Parallel()
	a, b := twoNodeJob(t)
	t0 := time.Unix(1000, 0)
	prev := snap(t, t0, a, b)
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1 << 20})
	b.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1 << 18, "counters/port_rcv_data": 1 << 20})
	b.advance(t, "mlx5_4", map[string]uint64{"hw_counters/out_of_buffer": 5})
	a.advance(t, "mlx5_1", map[string]uint64{"counters/port_xmit_data": 1 << 22}) // a PF no pod holds
	cur := snap(t, t0.Add(2*time.Second), a, b)

	rows, _, _ := clusterFrame(prev, cur, options{sortBy: "traffic"})
	if len(rows) != 2 {
		t.Fatalf("%d rows, want job llama and pod solo: %+v", len(rows), rows)
	}
	llama := rows[0]
	if llama.job != "ml/llama" || llama.node != "node-a,node-b" || llama.pods != "2" || llama.devices != 3 ||
		llama.sum.TxBytes != (4<<20+4<<18)/2 || llama.sum.RxBytes != (4<<20)/2 {
		t.Errorf("job row %+v, want ml/llama on node-a,node-b, 2 pods, 3 devices, %d B/s out and %d in",
			llama, (4<<20+4<<18)/2, (4<<20)/2)
	}
	if solo := rows[1]; solo.job != "dev/pod:solo" || solo.node != "node-b" || solo.sum.Errors != 2.5 {
		t.Errorf("pod row %+v, want dev/pod:solo on node-b with 2.5 errors/s", solo)
	}
	if got, _, _ := clusterFrame(prev, cur, options{sortBy: "errors"}); got[0].job != "dev/pod:solo" {
		t.Errorf("by errors: first %s", got[0].job)
	}

	ports, name, _ := clusterFrame(prev, cur, options{sortBy: "traffic", job: "llama"})
	if name != "ml/llama" {
		t.Errorf("--job llama is %q, want ml/llama", name)
	}
	if len(ports) != 3 || ports[0].node != "node-b" || ports[0].dev != "mlx5_3" || ports[0].pods != "ml/w1" || ports[0].sum.RxBytes != (4<<20)/2 ||
		ports[1].node != "node-a" || ports[1].sum.TxBytes != (4<<20)/2 {
		t.Errorf("ports of llama: %+v", ports)
	}
}

// An agent that restarted exports totals from zero again: its rows say
// reset, with no rate (neither a negative one nor 0).
func TestClusterFrameMarksAResetAgent(t *testing.T) {
	t.Parallel()
	a, _ := twoNodeJob(t)
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1000})
	prev := snap(t, time.Unix(1000, 0), a)
	restarted := newAgentNode(t, "node-a", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w0", Container: "c", Job: "llama"},
	})
	rows, _, _ := clusterFrame(prev, snap(t, time.Unix(1001, 0), restarted), options{sortBy: "traffic"})
	if len(rows) != 1 || !rows[0].sum.Reset || rows[0].sum.Has.TxBytes {
		t.Fatalf("after a restart: %+v, want one row marked reset without a rate", rows)
	}
	if c := cells(rows[0].sum); c.tx != "-" || c.errs != "- reset" {
		t.Errorf("after a restart: cells %+v, want - and - reset", c)
	}
}

// The command in cluster mode over a scrape stand-in (the API server's pod
// proxy is client-go's; tested on the multi-node cluster): one frame, the
// job's row, and an agent that could not be read named, not fatal.
func TestClusterCommandOnce(t *testing.T) {
	a, b := twoNodeJob(t)
	at := time.Unix(1000, 0)
	scrape := func(context.Context) ([]agentScrape, error) {
		at = at.Add(time.Second)
		return []agentScrape{
			a.answer(t, at), b.answer(t, at),
			{pod: "agent-c", node: "node-c", err: errors.New("scraping agent-c: connection refused")},
		}, nil
	}
	var out strings.Builder
	o := options{sortBy: "traffic", interval: 100 * time.Millisecond, iterations: 1}
	if err := runCluster(context.Background(), iostreams.Streams{Out: &out, ErrOut: &out}, o, scrape); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"railyard top --cluster: 2 jobs, every 100ms", "JOB", "ml/llama", "node-a,node-b", "not counted: node-c: scraping agent-c: connection refused"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output without %q", want)
		}
	}
	if err := runCluster(context.Background(), iostreams.Streams{Out: &out, ErrOut: &out}, o, func(context.Context) ([]agentScrape, error) {
		return nil, errors.New("no running agent pod")
	}); err == nil {
		t.Error("no agents: no error")
	}
}

func TestParseScrapeRefusesGarbage(t *testing.T) {
	t.Parallel()
	s := newSnapshot()
	if err := parseScrape(agentScrape{node: "a", text: []byte("railyard_rdma_port_transmit_bytes_total{node=\"a\" 12\n")}, &s); err == nil {
		t.Error("a broken label set parsed")
	}
	if err := parseScrape(agentScrape{node: "a", text: []byte("other_metric_total 3\nrailyard_rdma_unknown_total{node=\"a\"} 1\n")}, &s); err != nil || len(s.ports) != 0 {
		t.Errorf("foreign and unknown series: %v, %d kept", err, len(s.ports))
	}
}

// --job names a job with its namespace: two namespaces each with a job
// llama are two jobs. NAMESPACE/NAME shows that one's ports; a bare NAME
// shows nothing while several namespaces have it, and says which; a pod
// of no job is named as the view prints it (NAMESPACE/pod:NAME).
func TestClusterJobIsNamespaced(t *testing.T) {
	t.Parallel()
	a := newAgentNode(t, "node-a", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w0", Container: "c", Job: "llama"},
	})
	b := newAgentNode(t, "node-b", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "dev", Pod: "x0", Container: "c", Job: "llama"},
		"0000:2a:00.1": {Namespace: "dev", Pod: "solo", Container: "c"},
	})
	t0 := time.Unix(1000, 0)
	prev := snap(t, t0, a, b)
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1 << 20})
	cur := snap(t, t0.Add(time.Second), a, b)
	for _, tc := range []struct {
		job, name, note string
		ports           []string // node/pod of each row
	}{
		{job: "ml/llama", name: "ml/llama", ports: []string{"node-a ml/w0"}},
		{job: "dev/llama", name: "dev/llama", ports: []string{"node-b dev/x0"}},
		{job: "dev/pod:solo", name: "dev/pod:solo", ports: []string{"node-b dev/solo"}},
		{job: "llama", name: "llama", note: "job llama is in namespaces dev, ml: give --job NAMESPACE/llama"},
		{job: "other/llama", name: "other/llama"},
	} {
		rows, name, notes := clusterFrame(prev, cur, options{sortBy: "traffic", job: tc.job})
		var ports []string
		for _, r := range rows {
			ports = append(ports, r.node+" "+r.pods)
		}
		if diff := cmp.Diff(tc.ports, ports); diff != "" {
			t.Errorf("--job %s: ports (-want +got):\n%s", tc.job, diff)
		}
		if name != tc.name || strings.Join(notes, "; ") != tc.note {
			t.Errorf("--job %s: named %q, notes %q; want %q, %q", tc.job, name, notes, tc.name, tc.note)
		}
	}
	// One namespace with the name: a bare NAME is that job.
	if rows, name, _ := clusterFrame(snap(t, t0, a), snap(t, t0.Add(time.Second), a), options{sortBy: "traffic", job: "llama"}); name != "ml/llama" || len(rows) != 1 {
		t.Errorf("--job llama with ml's alone: %q, %+v", name, rows)
	}
	for _, bad := range []string{"/llama", "ml/", "a/b/c"} {
		if _, _, err := clitest.Run(t, NewCommand, "", "--cluster", "--job", bad); err == nil || !strings.Contains(err.Error(), "want NAME or NAMESPACE/NAME") {
			t.Errorf("--job %s: %v", bad, err)
		}
	}
}

// A node whose agent did not answer is shown as such: its ports, seen at
// the last answer, are still listed with their rates unknown ("-") and
// the node marked, its job's NODES name it marked too, and the header
// says why it is not counted.
func TestClusterFrameShowsANodeThatDidNotAnswer(t *testing.T) {
	t.Parallel()
	a, b := twoNodeJob(t)
	t0 := time.Unix(1000, 0)
	prev := snap(t, t0, a, b)
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1 << 20})
	cur := snap(t, t0.Add(time.Second), a)
	cur.missing["node-b"] = "scraping agent-node-b: no answer within 2s: context deadline exceeded"

	o := options{sortBy: "traffic", interval: 2 * time.Second}
	rows, name, notes := clusterFrame(prev, cur, o)
	got := map[string]string{}
	for _, r := range rows {
		c := cells(r.sum)
		got[r.job] = r.node + " " + c.tx + " " + c.errs
	}
	want := map[string]string{"ml/llama": "node-a,node-b (no answer) 4.0MiB 0", "dev/pod:solo": "node-b (no answer) - -"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	var out bytes.Buffer
	if err := renderCluster(&out, rows, name, frameNotes(prev, cur, notes), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "not counted: node-b: scraping agent-node-b: no answer within 2s") {
		t.Errorf("the header does not say node-b is not counted:\n%s", out.String())
	}

	o.job = "ml/llama"
	ports, _, _ := clusterFrame(prev, cur, o)
	got = map[string]string{}
	for _, r := range ports {
		got[r.node+" "+r.dev] = cells(r.sum).tx
	}
	want = map[string]string{"node-a mlx5_3": "4.0MiB", "node-a mlx5_4": "0B", "node-b (no answer) mlx5_3": "-"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ports of ml/llama (-want +got):\n%s", diff)
	}
}
