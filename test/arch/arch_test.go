package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/archgraph"
)

const module = "github.com/railyard-io/railyard/"

type pkg struct {
	ImportPath string
	Imports    []string // direct
	Deps       []string // transitive
}

// load lists every package of the module (the e2e-tagged ones too) and
// everything they link, each with its direct imports and all its deps.
func load(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "e2e", "-deps", "-json=ImportPath,Imports,Deps", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// rel is a module package's path relative to the module; other paths are
// kept as they are.
func rel(p string) string { return strings.TrimPrefix(p, module) }

func inModule(p string) bool { return strings.HasPrefix(p, module) }

// outside says whether a rule's path names an outside package (its first
// element is a domain) rather than one of the module's.
func outside(path string) bool { return strings.Contains(strings.Split(path, "/")[0], ".") }

func under(p string, prefixes ...string) bool {
	for _, pre := range prefixes {
		if pre == "." || p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// A rule: the packages it covers, and the deps they must not have (a
// module package by path, or any outside import path by prefix).
type rule struct {
	name     string
	packages []string // "." is every package of the module
	// layers are internal/archgraph's layers (by ID) whose packages the
	// rule covers too: a rule on a part of the house names its layer.
	layers    []string
	forbidden []string
	// std are standard library packages the covered packages must not
	// import directly.
	std []string
	// only, when set, lists the only module packages allowed as deps.
	only []string
	// direct checks direct imports only (the packages doing the thing),
	// not everything linked.
	direct bool
	// exempt are covered packages the rule does not hold for (its subject).
	exempt []string
}

var rules = []rule{
	{
		name:   "the model knows no adapter",
		layers: []string{"model"},
		forbidden: []string{"internal/agent", "internal/deviceplugin", "internal/cni", "internal/cli", "internal/pool",
			"internal/podresources", "internal/alloc", "api", "internal/netops", "k8s.io", "google.golang.org/grpc"},
	},
	{
		name:     "policies see only the model",
		packages: []string{"internal/alloc"},
		only:     []string{"internal/topology", "internal/assign", "internal/pciaddr"},
	},
	{
		name:     "only netops changes the network (netlink, namespaces)",
		packages: []string{"."},
		forbidden: []string{"github.com/vishvananda/netlink", "github.com/vishvananda/netns",
			"github.com/containernetworking/plugins/pkg/ns", "github.com/containernetworking/plugins/pkg/ip",
			"github.com/containernetworking/plugins/pkg/ipam"},
		direct: true,
		exempt: []string{"internal/netops"},
	},
	{
		name:      "no Kubernetes client below the fabric publisher (only nodefabric talks to the API server)",
		packages:  []string{"internal/lldp", "internal/fabric", "internal/ibneighbor"},
		forbidden: []string{"k8s.io/client-go"},
	},
	{
		name:      "counters read sysfs only through internal/sysfs",
		packages:  []string{"internal/rdmacounter", "internal/porthealth", "internal/rdmastats"},
		std:       []string{"os", "io/fs", "io/ioutil", "path/filepath", "syscall"},
		forbidden: []string{"golang.org/x/sys/unix", "internal/fakesysfs"},
		direct:    true,
	},
	{
		name:      "proof tools do not reach into the agent or the plugin",
		layers:    []string{"prooftools"},
		forbidden: []string{"internal/agent", "internal/deviceplugin", "internal/cni", "internal/netops", "internal/podresources"},
	},
	{
		name:      "DRA slices and job claims are a library over the model and pools",
		packages:  []string{"internal/dra", "internal/jobrails"},
		forbidden: []string{"internal/agent", "internal/deviceplugin", "internal/cni", "internal/netops", "internal/podresources", "internal/binding"},
	},
	{
		name:      "the DRA driver gets what a container gets from containerdev, not from late binding",
		packages:  []string{"internal/draplugin"},
		forbidden: []string{"internal/binding"},
		direct:    true,
	},
	{
		name:     "benchmark parsing and judging need no node model",
		packages: []string{"internal/bench"},
		only:     []string{},
	},
	{
		name:      "libraries do not depend on the command line",
		packages:  []string{"internal", "api", "machines"},
		forbidden: []string{"internal/cli"},
		exempt:    []string{"internal/cli"},
	},
	{
		name:     "railyard-cni links no Kubernetes client or API types, gRPC, Helm or image library (it runs per pod)",
		packages: []string{"cmd/railyard-cni"},
		forbidden: []string{"k8s.io/client-go", "helm.sh", "github.com/google/go-containerregistry",
			"github.com/prometheus", "internal/agent", "internal/deviceplugin", "internal/discovery", "internal/dra",
			"internal/draplugin", "k8s.io/api", "google.golang.org/grpc"}, // late binding lists PodResources through podlist, not gRPC (+11 MB)
	},
}

// covers says whether r holds for the package p: test helpers
// (netopstest, kubelettest, test/...) are never covered.
func (r rule) covers(p string) bool {
	if !inModule(p) {
		return false
	}
	p = rel(p)
	if strings.HasSuffix(p, "test") || under(p, "test") {
		return false
	}
	if under(p, r.exempt...) {
		return false
	}
	if l, ok := archgraph.LayerOf(p, archgraph.Layers); ok && slices.Contains(r.layers, l.ID) {
		return true
	}
	return under(p, r.packages...)
}

// bad says whether p may not be a dep of a package r covers.
func (r rule) bad(p string) bool {
	if inModule(p) {
		p = rel(p)
		if r.only != nil && !under(p, r.only...) {
			return true
		}
		return slices.ContainsFunc(r.forbidden, func(f string) bool { return !outside(f) && under(p, f) })
	}
	return slices.Contains(r.std, p) || slices.ContainsFunc(r.forbidden, func(f string) bool { return outside(f) && strings.HasPrefix(p, f) })
}

// violations returns one line per bad import: an import of a package r
// covers that is forbidden, or (for a rule on everything linked) that
// links something forbidden, "importer -> imported (links what): rule".
// An import of another covered package is that package's to answer for,
// so a chain is reported once, at the import that brings the bad dep in.
// It also returns how many packages the rules covered.
func violations(pkgs map[string]pkg, rules []rule) ([]string, map[string]int) {
	var lines []string
	checked := map[string]int{}
	for _, r := range rules {
		for _, p := range sortedKeys(pkgs) {
			if !r.covers(p) {
				continue
			}
			checked[r.name]++
			for _, d := range pkgs[p].Imports {
				switch {
				case r.bad(d):
					lines = append(lines, fmt.Sprintf("%s -> %s: %s", rel(p), rel(d), r.name))
				case r.direct || r.covers(d):
				default:
					if i := slices.IndexFunc(pkgs[d].Deps, r.bad); i >= 0 {
						lines = append(lines, fmt.Sprintf("%s -> %s (links %s): %s", rel(p), rel(d), rel(pkgs[d].Deps[i]), r.name))
					}
				}
			}
		}
	}
	return lines, checked
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestArchitectureRules(t *testing.T) {
	pkgs := load(t)
	lines, checked := violations(pkgs, rules)
	for _, l := range lines {
		t.Error(l)
	}
	ids := map[string]bool{}
	for _, l := range archgraph.Layers {
		ids[l.ID] = true
	}
	for _, r := range rules {
		if checked[r.name] == 0 {
			t.Errorf("%s: no package checked (paths moved?)", r.name)
		}
		for _, l := range r.layers {
			if !ids[l] {
				t.Errorf("%s: no layer %q in internal/archgraph/layers.go", r.name, l)
			}
		}
	}
}

// TestViolationsOneLinePerBadImport: a forbidden package linked through a
// chain is reported once, at the import that brings it in, naming
// importer -> imported and the rule (it was one "depends on" line for
// every covered package linking it, naming neither the import nor its
// importer's part).
func TestViolationsOneLinePerBadImport(t *testing.T) {
	t.Parallel()
	const (
		sim, report, helper   = module + "internal/sim", module + "internal/report", module + "internal/helper"
		bench, agent, simtest = module + "internal/bench", module + "internal/agent", module + "internal/simtest"
		client, api           = "k8s.io/client-go/kubernetes", "k8s.io/api/core/v1"
	)
	pkgs := map[string]pkg{
		sim:     {Imports: []string{report, "fmt"}, Deps: []string{"fmt", agent, helper, report}},
		report:  {Imports: []string{helper}, Deps: []string{agent, helper}},
		helper:  {Imports: []string{agent}, Deps: []string{agent}},
		bench:   {Imports: []string{agent, client, "strings"}, Deps: []string{agent, api, client, "strings"}},
		agent:   {},
		simtest: {Imports: []string{agent}, Deps: []string{agent}},
		client:  {Imports: []string{api}, Deps: []string{api}},
		api:     {},
		"fmt":   {},
	}
	rs := []rule{
		{name: "proof tools", packages: []string{"internal/sim", "internal/report", "internal/bench", "internal/simtest"}, forbidden: []string{"internal/agent", "k8s.io/api"}},
		{name: "only the model", packages: []string{"internal/bench"}, only: []string{"internal/helper"}},
		{name: "direct only", packages: []string{"internal/sim"}, forbidden: []string{"internal/agent"}, direct: true},
	}
	got, checked := violations(pkgs, rs)
	want := []string{
		"internal/bench -> internal/agent: proof tools",
		"internal/bench -> k8s.io/client-go/kubernetes (links k8s.io/api/core/v1): proof tools",
		"internal/report -> internal/helper (links internal/agent): proof tools",
		"internal/bench -> internal/agent: only the model",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"proof tools": 3, "only the model": 1, "direct only": 1}, checked); diff != "" {
		t.Errorf("checked (-want +got):\n%s", diff)
	}
}

// A rule's std packages are refused as direct imports of the packages it
// covers, and a rule naming a layer covers that layer's packages.
func TestViolationsStdAndLayers(t *testing.T) {
	t.Parallel()
	const (
		counter, sysfs, bench = module + "internal/rdmacounter", module + "internal/sysfs", module + "internal/bench"
	)
	pkgs := map[string]pkg{
		counter: {Imports: []string{sysfs, "os", "fmt"}, Deps: []string{sysfs, "os", "fmt"}},
		sysfs:   {Imports: []string{"os"}, Deps: []string{"os"}},
		bench:   {Imports: []string{"os"}, Deps: []string{"os"}},
	}
	rs := []rule{
		{name: "no os", packages: []string{"internal/rdmacounter"}, std: []string{"os"}, direct: true},
		{name: "proof tools by layer", layers: []string{"prooftools"}, std: []string{"os"}, direct: true},
	}
	got, _ := violations(pkgs, rs)
	want := []string{
		"internal/rdmacounter -> os: no os",
		"internal/bench -> os: proof tools by layer",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
