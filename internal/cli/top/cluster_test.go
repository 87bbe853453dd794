package top

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

func snap(t *testing.T, at time.Time, nodes ...*agentNode) snapshot {
	t.Helper()
	s := snapshot{at: at, ports: map[portID]*portCounters{}}
	for _, n := range nodes {
		if err := parseScrape(n.metrics(t), &s); err != nil {
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

	rows := clusterFrame(prev, cur, options{sortBy: "traffic"})
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
	if got := clusterFrame(prev, cur, options{sortBy: "errors"}); got[0].job != "dev/pod:solo" {
		t.Errorf("by errors: first %s", got[0].job)
	}

	ports := clusterFrame(prev, cur, options{sortBy: "traffic", job: "llama"})
	if len(ports) != 3 || ports[0].node != "node-b" || ports[0].dev != "mlx5_3" || ports[0].pods != "ml/w1" || ports[0].sum.RxBytes != (4<<20)/2 ||
		ports[1].node != "node-a" || ports[1].sum.TxBytes != (4<<20)/2 {
		t.Errorf("ports of llama: %+v", ports)
	}
}

// An agent that restarted exports totals from zero again: its rows say
// reset, never a negative rate.
func TestClusterFrameMarksAResetAgent(t *testing.T) {
	t.Parallel()
	a, _ := twoNodeJob(t)
	a.advance(t, "mlx5_3", map[string]uint64{"counters/port_xmit_data": 1000})
	prev := snap(t, time.Unix(1000, 0), a)
	restarted := newAgentNode(t, "node-a", map[string]rdmacounter.Owner{
		"0000:18:00.1": {Namespace: "ml", Pod: "w0", Container: "c", Job: "llama"},
	})
	rows := clusterFrame(prev, snap(t, time.Unix(1001, 0), restarted), options{sortBy: "traffic"})
	if len(rows) != 1 || !rows[0].sum.Reset || rows[0].sum.TxBytes != 0 {
		t.Errorf("after a restart: %+v, want one row marked reset at 0 B/s", rows)
	}
}

// The command in cluster mode over a scrape stand-in (the API server's pod
// proxy is client-go's; tested on the multi-node cluster): one frame, the
// job's row, and an agent that could not be read named, not fatal.
func TestClusterCommandOnce(t *testing.T) {
	a, b := twoNodeJob(t)
	scrape := func(context.Context) ([]agentScrape, error) {
		return []agentScrape{
			{pod: "agent-a", node: "node-a", text: a.metrics(t)},
			{pod: "agent-b", node: "node-b", text: b.metrics(t)},
			{pod: "agent-c", node: "node-c", err: errors.New("scraping agent-c on node-c: connection refused")},
		}, nil
	}
	var out strings.Builder
	o := options{sortBy: "traffic", interval: 100 * time.Millisecond, iterations: 1}
	if err := runCluster(context.Background(), iostreams.Streams{Out: &out, ErrOut: &out}, o, scrape); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"railyard top --cluster: 2 jobs, every 100ms", "JOB", "ml/llama", "node-a,node-b", "not counted: scraping agent-c on node-c"} {
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
	s := snapshot{ports: map[portID]*portCounters{}}
	if err := parseScrape([]byte("railyard_rdma_port_transmit_bytes_total{node=\"a\" 12\n"), &s); err == nil {
		t.Error("a broken label set parsed")
	}
	if err := parseScrape([]byte("other_metric_total 3\nrailyard_rdma_unknown_total{node=\"a\"} 1\n"), &s); err != nil || len(s.ports) != 0 {
		t.Errorf("foreign and unknown series: %v, %d kept", err, len(s.ports))
	}
}
