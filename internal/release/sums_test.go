package release

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, data := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSumsAreSha256sumsFormatAndVerify(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"b.tar": "image", "a.tgz": "chart", "b.cdx.json": "{}"})
	sums, err := Sums(dir, []string{"b.tar", "b.cdx.json", "a.tgz"})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x  a.tgz\n%x  b.cdx.json\n%x  b.tar\n", sha256.Sum256([]byte("chart")), sha256.Sum256([]byte("{}")), sha256.Sum256([]byte("image")))
	if diff := cmp.Diff(want, string(sums)); diff != "" {
		t.Errorf("SHA256SUMS (-want +got):\n%s", diff)
	}
	names := []string{"a.tgz", "b.cdx.json", "b.tar"}
	writeFiles(t, dir, map[string]string{SumsFile: string(sums)})
	checked, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names, checked); diff != "" {
		t.Errorf("verified (-want +got):\n%s", diff)
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", "--strict", SumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
	}

	writeFiles(t, dir, map[string]string{"b.tar": "another image"})
	if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), "b.tar has sha256") {
		t.Errorf("a changed file: %v", err)
	}
	writeFiles(t, dir, map[string]string{"b.tar": "image", "extra": ""})
	if _, err := Verify(dir); err == nil || !strings.Contains(err.Error(), "extra is not in") {
		t.Errorf("a file not listed: %v", err)
	}
}

func TestSumsRefuseBadNamesAndParseSumsBadLines(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a": "x"})
	for _, names := range [][]string{{"../a"}, {"sub/a"}, {""}, {"a", "a"}, {"absent"}} {
		if _, err := Sums(dir, names); err == nil {
			t.Errorf("%q accepted", names)
		}
	}
	for _, doc := range []string{
		"abc  a\n",
		strings.Repeat("0", 64) + " a\n",
		strings.Repeat("0", 64) + "  a\n" + strings.Repeat("1", 64) + "  a\n",
	} {
		if _, err := ParseSums([]byte(doc)); err == nil {
			t.Errorf("%q parsed", doc)
		}
	}
	got, err := ParseSums([]byte(strings.Repeat("0", 64) + " *bin.tar\n"))
	if err != nil || got["bin.tar"] != strings.Repeat("0", 64) {
		t.Errorf("binary-mode line: %v %v", got, err)
	}
}
