package helmchart

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// Options are what `helm template` takes: a release name and namespace and
// values merged over the chart's values.yaml.
type Options struct {
	Release   string
	Namespace string
	Values    map[string]any
}

// Manifest is one rendered object document and the template it came from.
type Manifest struct {
	Source  string // "railyard/templates/daemonset.yaml"
	Content string
}

// Load reads the chart directory.
func Load(chartDir string) (*chart.Chart, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	return ch, nil
}

// Render renders the chart as `helm template` does, values checked against
// values.schema.json, and returns the documents in Helm's install order
// (Namespace, ServiceAccount, ConfigMap, ..., DaemonSet, custom resources).
func Render(ch *chart.Chart, o Options) ([]Manifest, error) {
	vals, err := chartutil.ToRenderValues(ch, o.Values, chartutil.ReleaseOptions{
		Name: o.Release, Namespace: o.Namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, chartutil.DefaultVersionSet, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("render: the chart has hooks, which static manifests cannot express")
	}
	out := make([]Manifest, 0, len(manifests))
	for _, m := range manifests {
		out = append(out, Manifest{Source: m.Name, Content: strings.TrimSpace(m.Content)})
	}
	return out, nil
}

// Stream joins manifests as `helm template` prints them.
func Stream(ms []Manifest) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Source, m.Content)
	}
	return b.String()
}

// LintMessage is one finding of `helm lint`.
type LintMessage struct {
	Severity string // INFO, WARNING, ERROR
	Path     string
	Text     string
}

func (m LintMessage) String() string { return m.Severity + " " + m.Path + ": " + m.Text }

// Lint runs `helm lint` (chart metadata, values against the schema,
// template rendering and the YAML of every object) with values merged over
// values.yaml, and returns its findings sorted.
func Lint(chartDir, namespace string, values map[string]any) []LintMessage {
	l := lint.All(chartDir, values, namespace, false)
	out := make([]LintMessage, 0, len(l.Messages))
	for _, m := range l.Messages {
		sev := "UNKNOWN"
		switch m.Severity {
		case support.InfoSev:
			sev = "INFO"
		case support.WarningSev:
			sev = "WARNING"
		case support.ErrorSev:
			sev = "ERROR"
		}
		out = append(out, LintMessage{Severity: sev, Path: m.Path, Text: m.Err.Error()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
