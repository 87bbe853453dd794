package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/inputfile"
)

// maxSource bounds a Go source file read.
const maxSource = 4 << 20

// A literalRule: string literals (struct tags included) matching spells
// belong to the packages of owners only (the directories and everything
// below them); tests (_test.go) and test/ may spell anything.
type literalRule struct {
	name   string
	spells *regexp.Regexp
	owners []string
}

var literalRules = []literalRule{
	{
		// Where RDMA device nodes are in a container, and the device-info
		// document's fields (a struct of its own elsewhere is a second
		// document): the device plugin, late binding, the DRA driver and
		// railyard-cni use containerdev's nodes, environment and document.
		name:   "what a container gets is built in internal/containerdev",
		spells: regexp.MustCompile(`^"/dev/infiniband|json:"pci-address`), // a path, not prose naming it
		owners: []string{"internal/containerdev"},
	},
	{
		// Rule 4: sysfs paths ("/sys/class/net", "/host/sys/bus/pci") are
		// built by internal/sysfs; fakesysfs and the CNI tests' tree write
		// fake trees. A root ("/sys") and /proc/sys are not sysfs paths.
		name:   "sysfs is read in one place (rule 4): use internal/sysfs",
		spells: regexp.MustCompile(`^"/sys/|(^"|/)sys/(class|bus|devices)(/|"$)`),
		owners: []string{"internal/sysfs", "internal/fakesysfs", "internal/cni/sysfstest"},
	},
}

// literalViolations returns one line per literal of the Go file src (at
// rel, module-relative) that a rule keeps to other packages.
func literalViolations(rel string, src []byte, rules []literalRule) ([]string, error) {
	if strings.HasSuffix(rel, "_test.go") || under(rel, "test") {
		return nil, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var lines []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		for _, r := range rules {
			if r.spells.MatchString(lit.Value) && !slices.ContainsFunc(r.owners, func(o string) bool { return under(rel, o) }) {
				lines = append(lines, fset.Position(lit.Pos()).String()+": "+lit.Value+": "+r.name)
			}
		}
		return true
	})
	return lines, nil
}

// TestLiteralsStayWithTheirOwners: no Go source outside a rule's owners
// (tests aside) has a string literal or struct tag the rule keeps to
// them. (The DRA driver no longer importing internal/binding is a rule of
// TestArchitectureRules.)
func TestLiteralsStayWithTheirOwners(t *testing.T) {
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../../"))
		if d.IsDir() {
			if (path != "../.." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" || d.Name() == "vendor" || rel == "_output" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := inputfile.Read(path, maxSource)
		if err != nil {
			return err
		}
		lines, err := literalViolations(rel, src, literalRules)
		if err != nil {
			return err
		}
		checked++
		for _, l := range lines {
			t.Error(l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked (paths moved?)", checked)
	}
}

func TestLiteralViolations(t *testing.T) {
	t.Parallel()
	src := []byte(`package p

type doc struct {
	PCI string ` + "`json:\"pci-address,omitempty\"`" + `
}

var (
	a = "/sys/class/net"
	b = "/host/sys/bus/pci/devices"
	c = "/sys"
	d = "/proc/sys/kernel/random/boot_id"
	e = "sysfs class/infiniband/mlx5_0: ACTIVE"
	f = "/dev/infiniband/uverbs0"
	g = "sys/devices"
	h = "privileged, with the host's /dev/infiniband"
)
`)
	got, err := literalViolations("internal/agent/x.go", src, literalRules)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"internal/agent/x.go:4:13: `json:\"pci-address,omitempty\"`: what a container gets is built in internal/containerdev",
		`internal/agent/x.go:8:6: "/sys/class/net": sysfs is read in one place (rule 4): use internal/sysfs`,
		`internal/agent/x.go:9:6: "/host/sys/bus/pci/devices": sysfs is read in one place (rule 4): use internal/sysfs`,
		`internal/agent/x.go:13:6: "/dev/infiniband/uverbs0": what a container gets is built in internal/containerdev`,
		`internal/agent/x.go:14:6: "sys/devices": sysfs is read in one place (rule 4): use internal/sysfs`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, owned := range []string{"internal/sysfs/x.go", "internal/agent/x_test.go", "test/vm/x.go"} {
		if got, _ := literalViolations(owned, []byte(`package p; var a = "/sys/class/net"`), literalRules); len(got) != 0 {
			t.Errorf("%s: %q, want nothing", owned, got)
		}
	}
}
