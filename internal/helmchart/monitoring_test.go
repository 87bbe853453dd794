package helmchart

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

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

type promToken struct {
	kind byte // i ident, s string, n number, r range [..], $ variable, p punctuation or operator
	s    string
}

var promTokenRE = regexp.MustCompile(`^(?:(\s+)|([A-Za-z_:][A-Za-z0-9_:]*)|("(?:[^"\\]|\\.)*")|([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)|(\[[^\]]*\])|(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)|(=~|!~|!=|==|>=|<=|[-+*/%^=<>(){},]))`)

func lexPromQL(expr string) ([]promToken, error) {
	var out []promToken
	for rest := expr; rest != ""; {
		m := promTokenRE.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("cannot lex %q", rest)
		}
		rest = rest[len(m[0]):]
		for i, kind := range []byte{0, 'i', 's', 'n', 'r', '$', 'p'} {
			if m[i+1] != "" && kind != 0 {
				out = append(out, promToken{kind, m[i+1]})
			}
		}
	}
	return out, nil
}

var promFuncs = labelSet("rate", "irate", "increase", "sum", "avg", "min", "max", "count", "group", "topk", "bottomk",
	"histogram_quantile", "absent", "absent_over_time", "max_over_time", "min_over_time", "avg_over_time", "label_replace", "clamp_min")

// promQLUses checks expr against the agent's metrics: every series name
// is one the agent exports; every matcher's label is the series' (or a
// target label); every label of by, without, on, ignoring and group_*
// is one of the expression's series; counters only inside rate(),
// irate() or increase() (or absent()), gauges never; a _bucket series
// grouped by le. rawCounters allows a bare counter (a Grafana variable's
// label_values). It returns the series names used.
func promQLUses(truth map[string]metric, expr string, rawCounters bool) ([]string, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, err
	}
	var stack []string // per open parenthesis: its function or aggregation, "" for none
	var names, grouping []string
	pending := "" // the function or aggregation whose ( comes next
	used := map[string]bool{}
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		next := promToken{}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case tk.kind == '$':
			return nil, fmt.Errorf("variable %s outside a string or range", tk.s)
		case tk.kind == 'p' && tk.s == "(":
			stack, pending = append(stack, pending), ""
		case tk.kind == 'p' && tk.s == ")":
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced )")
			}
			stack = stack[:len(stack)-1]
		case tk.kind == 'p' && tk.s == "{":
			return nil, fmt.Errorf("a selector without a metric name")
		case tk.kind != 'i':
		case slices.Contains([]string{"by", "without", "on", "ignoring", "group_left", "group_right"}, tk.s):
			if next.s != "(" {
				if strings.HasPrefix(tk.s, "group_") {
					continue
				}
				return nil, fmt.Errorf("%s without a label list", tk.s)
			}
			for i += 2; i < len(toks) && toks[i].s != ")"; i++ {
				if toks[i].kind == 'i' {
					grouping = append(grouping, toks[i].s)
				} else if toks[i].s != "," {
					return nil, fmt.Errorf("%q in %s's label list", toks[i].s, tk.s)
				}
			}
		case promFuncs[tk.s] && (next.s == "(" || next.s == "by" || next.s == "without"):
			pending = tk.s
		case next.s == "(":
			return nil, fmt.Errorf("unknown function %s", tk.s)
		case slices.Contains([]string{"and", "or", "unless", "bool"}, tk.s):
		default: // a series
			labels, cumulative, ok := series(truth, tk.s)
			if !ok {
				return nil, fmt.Errorf("%s: the agent exports no such series", tk.s)
			}
			names = append(names, tk.s)
			used[tk.s] = true
			if next.s == "{" {
				for i += 2; i < len(toks) && toks[i].s != "}"; i += 4 {
					l := toks[i].s
					if toks[i].kind != 'i' || i+2 >= len(toks) || !slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1].s) || toks[i+2].kind != 's' {
						return nil, fmt.Errorf("%s: a matcher that is not label op \"value\"", tk.s)
					}
					if !labels[l] && !targetLabels[l] {
						return nil, fmt.Errorf("%s has no label %s", tk.s, l)
					}
					if i+3 < len(toks) && toks[i+3].s == "," {
						continue
					}
					i-- // no comma: the next step lands on }
				}
			}
			fn := ""
			for j := len(stack) - 1; j >= 0 && fn == ""; j-- {
				fn = stack[j]
			}
			rated := fn == "rate" || fn == "irate" || fn == "increase"
			switch {
			case rated && !cumulative:
				return nil, fmt.Errorf("%s(%s): not a counter", fn, tk.s)
			case cumulative && !rated && !rawCounters && fn != "absent" && fn != "absent_over_time":
				return nil, fmt.Errorf("counter %s used without rate() or increase()", tk.s)
			}
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("unbalanced (")
	}
	all := map[string]bool{}
	for n := range used {
		labels, _, _ := series(truth, n)
		for l := range labels {
			all[l] = true
		}
		if strings.HasSuffix(n, "_bucket") && !slices.Contains(grouping, "le") {
			return nil, fmt.Errorf("%s not grouped by le", n)
		}
	}
	for _, l := range grouping {
		if !all[l] && !targetLabels[l] {
			return nil, fmt.Errorf("label %s is on none of the expression's series", l)
		}
	}
	return names, nil
}

func TestPromQLCheckFindsMistakes(t *testing.T) {
	truth := agentTruth(t)
	for _, c := range []struct{ expr, want string }{
		{`rate(railyard_rdma_port_rcv_errors_total[5m])`, "no such series"},
		{`railyard_pool_devices{healthy="Unhealthy"}`, "no label healthy"},
		{`rate(railyard_pool_devices[5m])`, "not a counter"},
		{`railyard_warnings_total > 0`, "without rate()"},
		{`sum by (pod) (railyard_pool_devices)`, "label pod"},
		{`histogram_quantile(0.9, sum by (at) (rate(railyard_bind_duration_seconds_bucket[5m])))`, "grouped by le"},
		{`predict_linear(railyard_pool_devices[1h], 60)`, "unknown function"},
		{`sum(rate(railyard_warnings_total[5m])`, "unbalanced"},
		{`railyard_pool_devices{resource=~$pool}`, "not label op"},
		{`rate(railyard_bind_duration_seconds[5m])`, "no such series"},
	} {
		if _, err := promQLUses(truth, c.expr, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.expr, err, c.want)
		}
	}
	if _, err := promQLUses(truth, `sum by (le, at) (rate(railyard_bind_duration_seconds_bucket{result="ok"}[5m]) * on (instance) group_left (node) group by (instance, node) (railyard_rdma_counter_read_errors{node=~"$node"}))`, false); err != nil {
		t.Errorf("a correct expression: %v", err)
	}
}

func TestMonitoringIsOffByDefault(t *testing.T) {
	ms, objs := render(t, nil)
	for _, m := range ms {
		if strings.Contains(m.Source, "/monitoring-") {
			t.Errorf("%s renders without monitoring.*.enabled", m.Source)
		}
	}
	if n := len(objs.byKind["PrometheusRule"]); n != 0 {
		t.Errorf("%d PrometheusRules by default", n)
	}
}

type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

func renderRule(t *testing.T, rule map[string]any) prometheusRule {
	t.Helper()
	_, objs := render(t, map[string]any{"monitoring": map[string]any{"prometheusRule": rule}})
	var pr prometheusRule
	objs.one(t, "PrometheusRule", &pr)
	return pr
}

// prometheusTemplate parses an annotation as Prometheus does (text/template,
// $labels and $value defined) and expands it with labels.
func prometheusTemplate(text string, labels map[string]string) (string, error) {
	funcs := template.FuncMap{"humanize": func(v any) string { return fmt.Sprint(v) }}
	tmpl, err := template.New("").Option("missingkey=zero").Funcs(funcs).Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tmpl.Execute(&b, map[string]any{"Labels": labels, "Value": 1.5})
	return b.String(), err
}

func TestPrometheusRuleAlertsUseOnlyTheAgentsMetrics(t *testing.T) {
	truth := agentTruth(t)
	pr := renderRule(t, map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}})
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Metadata.Namespace != "railyard-system" || pr.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("PrometheusRule %s %s/%s labels %v", pr.APIVersion, pr.Metadata.Namespace, pr.Metadata.Name, pr.Metadata.Labels)
	}
	alerts := map[string]bool{}
	watched := map[string]int{} // RDMA series -> rules
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			alerts[r.Alert] = true
			names, err := promQLUses(truth, r.Expr, false)
			if err != nil {
				t.Errorf("%s: %s: %v", r.Alert, r.Expr, err)
			}
			if g.Name == "railyard-rdma" && strings.HasPrefix(r.Alert, "RailyardRDMA") && len(names) == 1 {
				watched[names[0]]++
			}
			if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" {
				t.Errorf("%s: severity %q", r.Alert, sev)
			}
			labels := map[string]string{"node": "gpu-01", "nic": "mlx5_3", "port": "1", "pod": "trainer-0", "resource": "railyard.io/rdma_vf"}
			for _, a := range []string{"summary", "description"} {
				text, err := prometheusTemplate(r.Annotations[a], labels)
				if err != nil || len(text) < 10 {
					t.Errorf("%s: %s %q: %v", r.Alert, a, text, err)
				}
			}
			if d := r.Annotations["description"]; !strings.Contains(d, "railyard doctor") && !strings.Contains(d, "railyard top") {
				t.Errorf("%s: the description says neither railyard doctor nor railyard top: %s", r.Alert, d)
			}
		}
	}
	want := []string{"RailyardAgentAbsent", "RailyardAgentNodeMissing", "RailyardAgentWarnings", "RailyardBindErrors",
		"RailyardDevicePluginRPCErrors", "RailyardDiscoveryFailing", "RailyardPluginNotRegistered", "RailyardPoolDevicesUnhealthy",
		"RailyardPoolEmpty", "RailyardPoolNoHealthyDevices", "RailyardRDMACounterReadErrors", "RailyardRDMALinkErrors",
		"RailyardRDMAPacketErrors", "RailyardRDMARetransmits", "RailyardRDMARetriesExceeded"}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(alerts))); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
	// Every error counter of internal/rdmacounter is watched, once.
	for _, c := range rdmacounter.Counters() {
		name := rdmastats.MetricName(c)
		want := 0
		if c.Kind == rdmacounter.Error {
			want = 1
		}
		if n := watched[name]; n != want {
			t.Errorf("%s (%s) in %d RDMA alert rules, want %d", name, c.Kind, n, want)
		}
	}
}

func TestPrometheusRuleValuesSetWindowsAndThresholds(t *testing.T) {
	pr := renderRule(t, map[string]any{"enabled": true, "window": "3m", "for": "1m", "stateFor": "20m", "absentFor": "2m", "nodeLookback": "6h",
		"rdma": map[string]any{"linkErrorsPerSecond": 0.5, "retriesExceededPerSecond": 0}})
	got := map[string]string{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Labels["counter"] == "" || r.Labels["counter"] == "port_symbol_errors" || r.Labels["counter"] == "retries_exceeded" {
				got[r.Alert] = r.For + " " + r.Expr
			}
		}
	}
	for alert, want := range map[string]string{
		"RailyardRDMALinkErrors":      "1m rate(railyard_rdma_port_symbol_errors_total[3m]) > 0.5",
		"RailyardRDMARetriesExceeded": "1m rate(railyard_rdma_retries_exceeded_total[3m]) > 0",
		"RailyardPoolEmpty":           "20m railyard_pool_empty == 1",
		"RailyardAgentAbsent":         "2m absent(railyard_warnings_total)",
		"RailyardAgentNodeMissing":    "2m group by (node) (max_over_time(railyard_rdma_counter_read_errors[6h])) unless group by (node) (railyard_rdma_counter_read_errors)",
		"RailyardAgentWarnings":       " increase(railyard_warnings_total[3m]) > 0",
	} {
		if got[alert] != want {
			t.Errorf("%s: %q, want %q", alert, got[alert], want)
		}
	}
}

type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"panels"`
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

func TestDashboardQueriesUseOnlyTheAgentsMetrics(t *testing.T) {
	truth := agentTruth(t)
	_, objs := render(t, map[string]any{"monitoring": map[string]any{"dashboard": map[string]any{"enabled": true}}})
	var cm corev1.ConfigMap
	if !objs.byComponent(t, "ConfigMap", "dashboard", &cm) {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "railyard-system" {
		t.Errorf("ConfigMap %s/%s labels %v", cm.Namespace, cm.Name, cm.Labels)
	}
	file, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "railyard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(cm.Data["railyard.json"]) != strings.TrimSpace(string(file)) {
		t.Error("the ConfigMap does not hold dashboards/railyard.json")
	}
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(cm.Data["railyard.json"]))
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q title %q", d.UID, d.Title)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		m := labelValuesRE.FindStringSubmatch(fmt.Sprint(q["query"]))
		if m == nil {
			t.Errorf("variable %s: query %v is not label_values(series, label)", v.Name, v.Query)
			continue
		}
		names, err := promQLUses(truth, m[1], true)
		if err != nil || len(names) != 1 {
			t.Errorf("variable %s: %s: %v", v.Name, m[1], err)
			continue
		}
		if l, _, _ := series(truth, names[0]); !l[m[2]] {
			t.Errorf("variable %s: %s has no label %s", v.Name, names[0], m[2])
		}
	}
	for _, v := range []string{"datasource", "node", "namespace", "pod"} {
		if !vars[v] {
			t.Errorf("no $%s variable", v)
		}
	}
	ids := map[int]bool{}
	panels := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		panels++
		if len(p.Targets) == 0 || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: %d targets, datasource %q", p.Title, len(p.Targets), p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			if _, err := promQLUses(truth, tg.Expr, false); err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, tg.Expr, err)
			}
		}
	}
	if panels < 10 {
		t.Errorf("%d panels", panels)
	}
}

func TestDashboardLabelNamespaceAndAnnotationsAreValues(t *testing.T) {
	_, objs := render(t, map[string]any{"monitoring": map[string]any{"dashboard": map[string]any{"enabled": true,
		"label": "grafana.io/dashboard", "labelValue": "rdma", "namespace": "monitoring", "annotations": map[string]any{"grafana_folder": "RDMA"}}}})
	var cm corev1.ConfigMap
	if !objs.byComponent(t, "ConfigMap", "dashboard", &cm) {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.Labels["grafana.io/dashboard"] != "rdma" || cm.Labels["grafana_dashboard"] != "" || cm.Namespace != "monitoring" || cm.Annotations["grafana_folder"] != "RDMA" {
		t.Errorf("ConfigMap %s/%s labels %v annotations %v", cm.Namespace, cm.Name, cm.Labels, cm.Annotations)
	}
}

func TestMonitoringLintsClean(t *testing.T) {
	on := map[string]any{"monitoring": map[string]any{"prometheusRule": map[string]any{"enabled": true}, "dashboard": map[string]any{"enabled": true}}}
	for _, m := range Lint(chartDir, "railyard-system", on) {
		if m.Severity != "INFO" {
			t.Error(m)
		}
	}
	ms, _ := render(t, on)
	var docs []string
	for _, m := range ms {
		if strings.Contains(m.Source, "/monitoring-") {
			var obj map[string]any
			if err := yaml.UnmarshalStrict([]byte(m.Content), &obj); err != nil {
				t.Errorf("%s: %v", m.Source, err)
			}
			docs = append(docs, m.Source)
		}
	}
	sort.Strings(docs)
	if diff := cmp.Diff([]string{"railyard/templates/monitoring-dashboard.yaml", "railyard/templates/monitoring-rules.yaml"}, docs); diff != "" {
		t.Errorf("monitoring templates (-want +got):\n%s", diff)
	}
}

func TestMonitoringSchemaRejectsBadValues(t *testing.T) {
	ch := loadChart(t)
	rule := func(k string, v any) map[string]any {
		return map[string]any{"monitoring": map[string]any{"prometheusRule": map[string]any{k: v}}}
	}
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"monitoring": map[string]any{"grafana": true}}, "grafana"},
		{rule("enable", true), "enable"},
		{rule("window", "10 minutes"), "/monitoring/prometheusRule/window"},
		{rule("window", "0m"), "/monitoring/prometheusRule/window"},
		{rule("for", "5"), "/monitoring/prometheusRule/for"},
		{rule("labels", map[string]any{"release": 1}), "/monitoring/prometheusRule/labels/release"},
		{rule("rdma", map[string]any{"linkErrorsPerSecond": -1}), "/monitoring/prometheusRule/rdma/linkErrorsPerSecond"},
		{rule("rdma", map[string]any{"symbolErrorsPerSecond": 1}), "symbolErrorsPerSecond"},
		{map[string]any{"monitoring": map[string]any{"dashboard": map[string]any{"labelValue": 1}}}, "/monitoring/dashboard/labelValue"},
		{map[string]any{"monitoring": map[string]any{"dashboard": map[string]any{"label": "not a label"}}}, "/monitoring/dashboard/label"},
	} {
		_, err := Render(ch, Options{Release: "r", Namespace: "n", Values: c.values})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.values, err, c.want)
		}
	}
}
