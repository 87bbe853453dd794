package helmchart

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/rdmastats"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// The alerts and dashboard of monitoring.* (docs/counters.md, Monitoring)
// may use only metrics and labels the agent exports. Their truth comes
// from the code, two ways:
//
//   - the RDMA counters: internal/rdmastats' collector, the one the agent
//     registers (checked: internal/agent calls rdmastats.New), scraped on a
//     generated node whose ports have mlx5's and Soft-RoCE's counter files,
//     so that every metric it describes is gathered with its type and
//     labels (the test fails if one is missing from the scrape);
//   - the agent's own metrics: read from internal/agent's source with
//     go/parser (each prometheus.*Opts{Name: ...} with its label list, each
//     prometheus.NewDesc with the value type its collector emits). They
//     cannot be gathered: the registry is the unexported Metrics.reg, late
//     binding's metrics are made by an unexported constructor, and /metrics
//     of a running agent lists a vector only once it has a child (no RPC,
//     no bind: no railyard_rpc_duration_seconds). An exported
//     Metrics.Describe or Gatherer in internal/agent would let this read
//     the registry instead. A constructor the parser does not know fails
//     the test rather than being skipped.
//
// github.com/prometheus/prometheus (its PromQL parser) is not a dependency
// of this module and is not added for a test: promQLUses below is a small
// lexer of the PromQL the chart writes, which fails on what it does not
// know (an unknown function, a bare Grafana variable, unbalanced brackets).

// metric is one metric the agent exports.
type metric struct {
	typ    string // counter, gauge, histogram, summary, untyped
	labels map[string]bool
}

// targetLabels are set by Prometheus on every scraped series.
var targetLabels = map[string]bool{"job": true, "instance": true}

func labelSet(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// agentTruth is every metric on the agent's /metrics but the Go and
// process collectors' (which the chart does not use).
func agentTruth(t *testing.T) map[string]metric {
	t.Helper()
	out, registersRDMA := agentSourceMetrics(t)
	if !registersRDMA {
		t.Fatal("internal/agent does not call rdmastats.New: the RDMA counters are not on the agent's /metrics")
	}
	for name, m := range rdmaCollectorMetrics(t) {
		if _, dup := out[name]; dup {
			t.Fatalf("%s is both the agent's and rdmastats'", name)
		}
		out[name] = m
	}
	return out
}

// rdmaCollectorMetrics scrapes rdmastats' collector on a generated node:
// mlx5_0 and mlx5_1 with mlx5's counter files, mlx5_2 with Soft-RoCE's.
func rdmaCollectorMetrics(t *testing.T) map[string]metric {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(root) })
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	devs := rdmacounter.Devices(topo, map[string]rdmacounter.Owner{topo.NICs[0].PCI: {Namespace: "ns", Pod: "p", Container: "c", Job: "j"}})
	for i, dev := range devs {
		drv := fakesysfs.MLX5
		if i == len(devs)-1 {
			drv = fakesysfs.RXE
		}
		if err := fakesysfs.WriteCounters(root, dev.RDMA, drv); err != nil {
			t.Fatal(err)
		}
	}
	c := rdmastats.New(sysfs.New(root), "node-a", func() []rdmacounter.Device { return devs })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	described := 0
	for range descs {
		described++
	}
	out := map[string]metric{}
	for _, mf := range mfs {
		m := metric{typ: strings.ToLower(mf.GetType().String()), labels: map[string]bool{}}
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			m.labels[lp.GetName()] = true
		}
		out[mf.GetName()] = m
	}
	if len(out) != described || described < 2 {
		t.Fatalf("the scrape of the generated node has %d metrics, the collector describes %d: the truth would be incomplete", len(out), described)
	}
	return out
}

// agentSourceMetrics reads the metrics internal/agent creates from its
// source, and whether it registers rdmastats' collector.
func agentSourceMetrics(t *testing.T) (map[string]metric, bool) {
	t.Helper()
	dir := filepath.Join("..", "agent")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]metric{}
	rdma := false
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		fail := func(n ast.Node, format string, args ...any) {
			t.Helper()
			t.Fatalf("%s: %s (teach agentSourceMetrics)", fset.Position(n.Pos()), fmt.Sprintf(format, args...))
		}
		// The value types the file's collectors emit, for NewDesc.
		valueTypes := map[string]bool{}
		var descs []*ast.CallExpr
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			pkg, fn := selector(call.Fun)
			if pkg == "rdmastats" && fn == "New" {
				rdma = true
			}
			if pkg != "prometheus" {
				return true
			}
			switch fn {
			case "NewCounterVec", "NewGaugeVec", "NewHistogramVec", "NewSummaryVec",
				"NewCounter", "NewGauge", "NewHistogram", "NewSummary", "NewCounterFunc", "NewGaugeFunc", "NewUntypedFunc":
				lit, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					fail(call, "%s without a literal options struct", fn)
				}
				_, optsType := selector(lit.Type)
				m := metric{typ: strings.ToLower(strings.TrimSuffix(optsType, "Opts")), labels: map[string]bool{}}
				name := ""
				for _, el := range lit.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						fail(el, "options without field names")
					}
					switch key := kv.Key.(*ast.Ident).Name; key {
					case "Name":
						name = stringLit(t, fset, kv.Value)
					case "Namespace", "Subsystem", "ConstLabels":
						fail(kv, "%s is not read", key)
					}
				}
				if strings.HasSuffix(fn, "Vec") {
					for _, l := range stringList(t, fset, call.Args[1]) {
						m.labels[l] = true
					}
				}
				add(t, out, name, m)
			case "NewDesc":
				descs = append(descs, call)
			case "NewConstMetric", "MustNewConstMetric":
				_, vt := selector(call.Args[1])
				valueTypes[strings.ToLower(strings.TrimSuffix(vt, "Value"))] = true
			case "NewRegistry", "NewPedanticRegistry", "ExponentialBuckets", "LinearBuckets":
			default:
				if strings.HasPrefix(fn, "New") {
					fail(call, "prometheus.%s is not read", fn)
				}
			}
			return true
		})
		for _, call := range descs {
			if len(valueTypes) != 1 {
				fail(call, "NewDesc in a file emitting value types %v: its type is unknown", valueTypes)
			}
			m := metric{labels: map[string]bool{}}
			for vt := range valueTypes {
				m.typ = vt
			}
			for _, l := range stringList(t, fset, call.Args[2]) {
				m.labels[l] = true
			}
			add(t, out, stringLit(t, fset, call.Args[0]), m)
		}
	}
	if len(out) == 0 {
		t.Fatal("no metric found in internal/agent")
	}
	return out, rdma
}

func add(t *testing.T, out map[string]metric, name string, m metric) {
	t.Helper()
	if _, dup := out[name]; dup || name == "" {
		t.Fatalf("metric %q empty or made twice in internal/agent", name)
	}
	out[name] = m
}

// selector splits pkg.Name; "" for anything else.
func selector(e ast.Expr) (pkg, name string) {
	if s, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := s.X.(*ast.Ident); ok {
			return x.Name, s.Sel.Name
		}
	}
	return "", ""
}

func stringLit(t *testing.T, fset *token.FileSet, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Fatalf("%s: a metric or label name that is not a string literal (teach agentSourceMetrics)", fset.Position(e.Pos()))
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func stringList(t *testing.T, fset *token.FileSet, e ast.Expr) []string {
	t.Helper()
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return nil
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		t.Fatalf("%s: labels that are not a []string literal (teach agentSourceMetrics)", fset.Position(e.Pos()))
	}
	var out []string
	for _, el := range lit.Elts {
		out = append(out, stringLit(t, fset, el))
	}
	return out
}

// series resolves a series name: a metric, or a histogram's (summary's)
// _bucket, _sum or _count. cumulative: only rate() and increase() make
// sense of it.
func series(truth map[string]metric, name string) (labels map[string]bool, cumulative, ok bool) {
	if m, ok := truth[name]; ok {
		return m.labels, m.typ == "counter", m.typ != "histogram" && m.typ != "summary"
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		m, ok := truth[base]
		if !found || !ok || (m.typ != "histogram" && (m.typ != "summary" || suffix == "_bucket")) {
			continue
		}
		l := map[string]bool{}
		for k := range m.labels {
			l[k] = true
		}
		if suffix == "_bucket" {
			l["le"] = true
		}
		return l, true, true
	}
	return nil, false, false
}
