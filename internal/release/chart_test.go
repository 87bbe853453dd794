package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
)

func TestPackageChartIsReproducibleAndCarriesTheVersion(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "deploy", "helm", "railyard")
	name, a, err := PackageChart(dir, "0.2.0", testCreated)
	if err != nil {
		t.Fatal(err)
	}
	if name != "railyard-0.2.0.tgz" {
		t.Errorf("file name %q", name)
	}
	// Helm's Save stamps the clock: a second later, the same bytes.
	time.Sleep(1100 * time.Millisecond)
	_, b, err := PackageChart(dir, "0.2.0", testCreated)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two packagings of one chart differ")
	}

	ch, err := loader.LoadArchive(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "0.2.0" || ch.Metadata.AppVersion != "0.2.0" || ch.Name() != "railyard" {
		t.Errorf("chart %s version %q appVersion %q", ch.Name(), ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	src, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Templates) != len(src.Templates) || len(ch.Files) != len(src.Files) || !bytes.Equal(ch.Schema, src.Schema) {
		t.Errorf("packaged: %d templates, %d files; the directory: %d, %d", len(ch.Templates), len(ch.Files), len(src.Templates), len(src.Files))
	}

	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.Header.ModTime.IsZero() || zr.Header.Name != "" {
		t.Errorf("gzip header: time %v, name %q", zr.Header.ModTime, zr.Header.Name)
	}
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Typeflag != tar.TypeReg || h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(testCreated) {
			t.Errorf("%s: type %c mode %o owner %d:%d %q:%q time %v", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "railyard/Chart.yaml") || !slices.Contains(names, "railyard/values.schema.json") {
		t.Errorf("entries %v: want sorted, with Chart.yaml and values.schema.json", names)
	}
}

func TestPackageChartRefusesABadChart(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := PackageChart(dir, "0.2.0", testCreated); err == nil {
		t.Error("a directory without Chart.yaml packaged")
	}
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: x\nversion: 0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := PackageChart(dir, "not-a-version", testCreated); err == nil {
		t.Error("a version Helm refuses packaged")
	}
	name, tgz, err := PackageChart(dir, "1.0.0", testCreated)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"x-1.0.0.tgz", "1.0.0", "1.0.0"}, []string{name, ch.Metadata.Version, ch.Metadata.AppVersion}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
