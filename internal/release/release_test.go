package release

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/railyard-io/railyard/internal/image"
)

// exportCommit writes the tree of commit into a new directory (git
// archive), as a fresh checkout would have it.
func exportCommit(t *testing.T, root, commit string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	var tarball bytes.Buffer
	archive.Stdout = &tarball
	if err := archive.Run(); err != nil {
		t.Skipf("git archive: %v", err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return dir
}

// TestReleaseTwiceGivesTheSameBytes cuts the release of HEAD twice, from
// two exports of the commit (other paths, other file times), for amd64
// without the infiniband-diags variant (the suite's budget: each run
// builds every binary and gzips ~50 MiB; the Debian part of the SBOM has
// its own tests), then checks each release as an adopter would:
// SHA256SUMS matches every file, the chart loads with Helm's loader with
// the release's version and appVersion, each SBOM parses and lists the
// railyard module and its dependencies with versions and the image's
// digest; and both runs' SHA256SUMS are the same bytes.
func TestReleaseTwiceGivesTheSameBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary twice")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	commit := strings.TrimSpace(string(out))
	const version = "0.2.0"
	var sums [][]byte
	for i := range 2 {
		src := exportCommit(t, root, commit)
		if i == 1 {
			if err := os.Chtimes(filepath.Join(src, "go.mod"), time.Now(), time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{
			Dir: src, Version: version, Revision: commit, Created: time.Unix(1754049600, 0),
			Out: filepath.Join(t.TempDir(), "release"), Arches: []string{"amd64"},
			Chart: filepath.Join(src, "deploy", "helm", "railyard"), Repository: "ghcr.io/railyard-io/railyard",
			Source: "https://github.com/railyard-io/railyard", Debian: image.DebianOptions{CacheDir: t.TempDir()},
		}
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
		start := time.Now()
		arts, err := Release(ctx, o)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("release %d from %s in %s", i, src, time.Since(start).Round(time.Millisecond))

		var names []string
		for _, a := range arts {
			names = append(names, a.Name)
		}
		wantNames := []string{"railyard-0.2.0-linux-amd64.cdx.json", "railyard-0.2.0-linux-amd64.tar", "railyard-0.2.0.tgz", SumsFile}
		if diff := cmp.Diff(wantNames, names); diff != "" {
			t.Fatalf("artifacts (-want +got):\n%s", diff)
		}
		checked, err := Verify(o.Out)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantNames[:3], checked); diff != "" {
			t.Errorf("SHA256SUMS lists (-want +got):\n%s", diff)
		}
		checkChart(t, filepath.Join(o.Out, "railyard-0.2.0.tgz"), version)
		checkSBOM(t, filepath.Join(o.Out, "railyard-0.2.0-linux-amd64.cdx.json"), arts[1].Digest, version)

		b, err := os.ReadFile(filepath.Join(o.Out, SumsFile))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, b)
	}
	if diff := cmp.Diff(string(sums[0]), string(sums[1])); diff != "" {
		t.Fatalf("two releases of %s differ (-first +second):\n%s", commit, diff)
	}
	t.Logf("SHA256SUMS of both runs:\n%s", sums[0])
}

func checkChart(t *testing.T, file, version string) {
	t.Helper()
	ch, err := loader.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != version || ch.Metadata.AppVersion != version {
		t.Errorf("%s: version %q appVersion %q, want %s", file, ch.Metadata.Version, ch.Metadata.AppVersion, version)
	}
}

func checkSBOM(t *testing.T, file, digest, version string) {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bom := decodeSBOM(t, doc)
	if m := bom.Metadata; m == nil || m.Component == nil || !strings.Contains(m.Component.PackageURL, strings.Replace(digest, ":", "%3A", 1)) {
		t.Errorf("%s: the image component does not name digest %s", file, digest)
	}
	mod, ok := component(bom, ModulePath)
	if !ok || mod.Version != "v"+version {
		t.Errorf("%s: railyard module %+v, want version v%s", file, mod, version)
	}
	deps := goModules(bom)
	if len(deps) == 0 {
		t.Fatalf("%s: no Go module besides railyard's", file)
	}
	for _, d := range deps {
		if d.Version == "" || !strings.HasSuffix(d.PackageURL, "@"+purlEscape(d.Version)) {
			t.Errorf("%s: module %s has version %q, purl %q", file, d.Name, d.Version, d.PackageURL)
		}
	}
	var bins []string
	for _, c := range *bom.Components {
		if strings.HasPrefix(c.BOMRef, "file:/") {
			bins = append(bins, c.Name)
		}
	}
	if diff := cmp.Diff([]string{"railyard", "railyard-agent", "railyard-cni", "railyard-cni-install"}, bins); diff != "" {
		t.Errorf("%s: binaries (-want +got):\n%s", file, diff)
	}
}

func TestReleaseRefusesBadOptionsAndForeignFiles(t *testing.T) {
	good := Options{Version: "0.2.0", Revision: "abc", Out: t.TempDir(), Arches: []string{"amd64"}, InfinibandArches: []string{"amd64"}}
	for name, change := range map[string]func(*Options){
		"leading v":             func(o *Options) { o.Version = "v0.2.0" },
		"two parts":             func(o *Options) { o.Version = "0.2" },
		"build metadata":        func(o *Options) { o.Version = "0.2.0+abc" },
		"no revision":           func(o *Options) { o.Revision = "" },
		"no out":                func(o *Options) { o.Out = "" },
		"no arch":               func(o *Options) { o.Arches = nil; o.InfinibandArches = nil },
		"arch twice":            func(o *Options) { o.Arches = []string{"amd64", "amd64"} },
		"infiniband not images": func(o *Options) { o.InfinibandArches = []string{"arm64"} },
	} {
		o := good
		change(&o)
		if _, err := Release(t.Context(), o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, v := range []string{"0.2.0", "1.0.0-rc.1", "10.20.30"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}

	// A directory with a file no previous release wrote is left alone.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"notes.txt": "mine"})
	if err := prepareOut(dir); err == nil {
		t.Error("a directory with someone's file accepted")
	}
	// A previous release is replaced: its listed files and SHA256SUMS go.
	writeFiles(t, dir, map[string]string{"notes.txt": "mine"})
	sums, err := Sums(dir, []string{"notes.txt"})
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{SumsFile: string(sums)})
	if err := prepareOut(dir); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left of the previous release", len(entries))
	}
	if err := prepareOut(filepath.Join(dir, "new", "dir")); err != nil {
		t.Fatal(err)
	}
}
