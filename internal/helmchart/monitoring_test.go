package helmchart

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/rdmastats"
)

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
		"RailyardDevicePluginRPCErrors", "RailyardDiscoveryFailing", "RailyardJobRailIdle", "RailyardNICDegraded", "RailyardNICFirmwareRefused", "RailyardPluginNotRegistered", "RailyardPoolDevicesUnhealthy",
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
