package arch

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/railyard-io/railyard/"

type pkg struct {
	ImportPath string
	Deps       []string // transitive
	Imports    []string // direct
}

// load lists every package of the module with its deps.
func load(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", module+"...")
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
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

func under(p string, prefixes ...string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// Each rule: the packages it covers, and deps they must not have (a module
// package by path, or any outside import path by prefix).
var rules = []struct {
	name      string
	packages  []string
	forbidden []string
	// only, when set, lists the only module packages allowed as deps.
	only []string
	// direct checks direct imports only (the packages doing the thing),
	// not everything linked.
	direct bool
}{
	{
		name:     "the model knows no adapter",
		packages: []string{"internal/sysfs", "internal/discovery", "internal/topology", "internal/nccltopo", "internal/assign", "internal/machine"},
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
	},
	{
		name:      "proof tools do not reach into the agent or the plugin",
		packages:  []string{"internal/bench", "internal/benchreport", "internal/benchplan", "internal/benchrun", "internal/benchprobe", "internal/chart", "internal/sim", "internal/simreport"},
		forbidden: []string{"internal/agent", "internal/deviceplugin", "internal/cni", "internal/netops", "internal/podresources"},
	},
	{
		name:      "DRA slices are a library over the model and pools",
		packages:  []string{"internal/dra"},
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
	},
	{
		name:     "railyard-cni links no Kubernetes client or API types, gRPC, Helm or image library (it runs per pod)",
		packages: []string{"cmd/railyard-cni"},
		forbidden: []string{"k8s.io/client-go", "helm.sh", "github.com/google/go-containerregistry",
			"github.com/prometheus", "internal/agent", "internal/deviceplugin", "internal/discovery", "internal/dra",
			"internal/draplugin", "k8s.io/api", "google.golang.org/grpc"}, // late binding lists PodResources through podlist, not gRPC (+11 MB)
	},
}

// exempt are packages a rule's "packages" prefix covers but that are not
// subject to it: the rule's own subject (netops for the netlink rule),
// test helpers, and the CLI itself.
var exempt = map[string][]string{
	"only netops changes the network (netlink, namespaces)": {"internal/netops"},
	"libraries do not depend on the command line":           {"internal/cli"},
}

func TestArchitectureRules(t *testing.T) {
	pkgs := load(t)
	if len(pkgs) < 20 {
		t.Fatalf("only %d packages listed", len(pkgs))
	}
	for _, r := range rules {
		checked := 0
		for p, info := range pkgs {
			deps := info.Deps
			if r.direct {
				deps = info.Imports
			}
			if !(under(p, r.packages...) || (len(r.packages) == 1 && r.packages[0] == ".")) || under(p, exempt[r.name]...) {
				continue
			}
			if strings.HasSuffix(p, "test") || strings.Contains(p, "test/") { // test helpers (netopstest, kubelettest, ...)
				continue
			}
			checked++
			for _, d := range deps {
				inModule := strings.HasPrefix(d, module)
				rel := strings.TrimPrefix(d, module)
				if r.only != nil && inModule && !under(rel, r.only...) {
					t.Errorf("%s: %s depends on %s", r.name, p, rel)
				}
				for _, f := range r.forbidden {
					if (inModule && under(rel, f)) || (!inModule && strings.HasPrefix(d, f)) {
						t.Errorf("%s: %s depends on %s", r.name, p, d)
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no package checked (paths moved?)", r.name)
		}
	}
}
