package helmchart

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// promToken is one token of the PromQL the chart writes; lexPromQL and
// promQLUses are the small checker the doc comment of
// monitoring_truth_test.go describes.
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
