package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// repoRoot is the module root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// tinyBinary builds internal/version's test program (the railyard
// module, nothing but the standard library linked) for GOARCH amd64.
func tinyBinary(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "printversion")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", out, "./internal/version/testdata/printversion")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeSBOM parses a CycloneDX JSON document with the library's decoder.
func decodeSBOM(t *testing.T, doc []byte) *cdx.BOM {
	t.Helper()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(doc), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("decode SBOM: %v", err)
	}
	return &bom
}

// component finds a component by name.
func component(bom *cdx.BOM, name string) (cdx.Component, bool) {
	if bom.Components == nil {
		return cdx.Component{}, false
	}
	for _, c := range *bom.Components {
		if c.Name == name {
			return c, true
		}
	}
	return cdx.Component{}, false
}

// goModules are the components whose package URL is a Go module's, but
// the standard library and Railyard's own.
func goModules(bom *cdx.BOM) []cdx.Component {
	var out []cdx.Component
	if bom.Components == nil {
		return nil
	}
	for _, c := range *bom.Components {
		if strings.HasPrefix(c.PackageURL, "pkg:golang/") && c.Name != "stdlib" && c.Name != ModulePath {
			out = append(out, c)
		}
	}
	return out
}

// dependsOn is a component's dependsOn list.
func dependsOn(bom *cdx.BOM, ref string) []string {
	if bom.Dependencies == nil {
		return nil
	}
	for _, d := range *bom.Dependencies {
		if d.Ref == ref && d.Dependencies != nil {
			return *d.Dependencies
		}
	}
	return nil
}
