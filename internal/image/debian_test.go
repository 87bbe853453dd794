package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests run DebianFiles against a local HTTP server serving .deb
// files built here (ar, control.tar.gz, data.tar.gz: no xz needed); the
// real packages are in infiniband_test.go.

type tarEntry struct {
	name, link string
	typ        byte
	mode       int64
	data       string
}

func gzTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.data))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fakeDeb builds a .deb as dpkg-deb lays it out.
func fakeDeb(t *testing.T, control string, data []tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("!<arch>\n")
	for _, m := range []struct {
		name string
		data []byte
	}{
		{"debian-binary", []byte("2.0\n")},
		{"control.tar.gz", gzTar(t, []tarEntry{{name: "./", typ: tar.TypeDir, mode: 0o755}, {name: "./control", typ: tar.TypeReg, mode: 0o644, data: control}})},
		{"data.tar.gz", gzTar(t, data)},
	} {
		fmt.Fprintf(&b, "%-16s%-12d%-6d%-6d%-8o%-10d`\n", m.name, 0, 0, 0, 0o100644, len(m.data))
		b.Write(m.data)
		if len(m.data)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func pin(name, debPath string, deb []byte, files ...string) DebianPackage {
	sum := sha256.Sum256(deb)
	return DebianPackage{Name: name, Version: "1.0-1", Arch: "amd64", Path: debPath, Size: int64(len(deb)), SHA256: hex.EncodeToString(sum[:]), Files: files}
}

// libDeb is a package with a library behind a soname link, a program
// whose path runs through a directory link, and a copyright file.
func libDeb(t *testing.T) []byte {
	return fakeDeb(t, "Package: libfoo1\nSource: foo\nVersion: 1.0-1\nArchitecture: amd64\nDescription: foo\n", []tarEntry{
		{name: "./", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/lib/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/lib/libfoo.so.1.2.3", typ: tar.TypeReg, mode: 0o644, data: "ELF libfoo"},
		{name: "./usr/lib/libfoo.so.1", typ: tar.TypeSymlink, link: "libfoo.so.1.2.3"},
		{name: "./usr/libexec", typ: tar.TypeSymlink, link: "/usr/lib"},
		{name: "./usr/lib/foo", typ: tar.TypeReg, mode: 0o4755, data: "ELF foo"},
		{name: "./usr/share/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/share/doc/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/share/doc/libfoo1/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/share/doc/libfoo1/copyright", typ: tar.TypeReg, mode: 0o644, data: "GPL"},
		{name: "./usr/lib/escape", typ: tar.TypeSymlink, link: "../../../etc/passwd"},
		{name: "./usr/lib/loop", typ: tar.TypeSymlink, link: "loop"},
	})
}

// serve serves files by path and counts the requests.
func serve(t *testing.T, files map[string][]byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, ok := files[strings.TrimPrefix(r.URL.Path, "/debian/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestDebianFilesTakesPinnedFilesFollowingLinksAndCachesThePackage(t *testing.T) {
	deb := libDeb(t)
	p := pin("libfoo1", "pool/main/f/foo/libfoo1_1.0-1_amd64.deb", deb, "usr/lib/libfoo.so.1", "usr/libexec/foo")
	srv, requests := serve(t, map[string][]byte{p.Path: deb})
	o := DebianOptions{Mirror: srv.URL + "/debian", CacheDir: filepath.Join(t.TempDir(), "debs")}
	var first []File
	for i := range 2 {
		files, err := DebianFiles(t.Context(), []DebianPackage{p}, o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = files
		} else if fmt.Sprint(files) != fmt.Sprint(first) {
			t.Errorf("from the cache:\n%v\nfrom the mirror:\n%v", files, first)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests for two builds, want 1 (the second from the cache)", n)
	}
	want := map[string]string{
		"usr/lib/libfoo.so.1":             "0644 ELF libfoo",
		"usr/libexec/foo":                 "0755 ELF foo", // setuid dropped
		"usr/share/doc/libfoo1/copyright": "0644 GPL",
		"var/lib/dpkg/status.d/libfoo1":   "0644 Package: libfoo1\nStatus: install ok installed\nSource: foo\nVersion: 1.0-1\nArchitecture: amd64\nDescription: foo\n",
	}
	got := map[string]string{}
	for _, f := range first {
		got[f.Path] = fmt.Sprintf("%04o %s", f.Mode, f.Data)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files:\n%q\nwant\n%q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(o.CacheDir, "libfoo1_1.0-1_amd64.deb")); err != nil || !bytes.Equal(b, deb) {
		t.Errorf("cache: %v", err)
	}
}

func TestDebianFilesRefusesBytesThatAreNotThePinnedPackage(t *testing.T) {
	deb := libDeb(t)
	p := pin("libfoo1", "pool/main/f/foo/libfoo1_1.0-1_amd64.deb", deb, "usr/lib/libfoo.so.1")
	other := append(append([]byte(nil), deb[:len(deb)-1]...), deb[len(deb)-1]^1)
	srv, _ := serve(t, map[string][]byte{p.Path: other})
	cache := t.TempDir()
	_, err := DebianFiles(t.Context(), []DebianPackage{p}, DebianOptions{Mirror: srv.URL + "/debian", CacheDir: cache})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("other bytes: %v, want ErrChecksum", err)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("the cache holds %v after a refused download", ents)
	}

	// A cached file that is not the package (an old copy, a truncated
	// one) is downloaded again, and replaced.
	if err := os.WriteFile(filepath.Join(cache, "libfoo1_1.0-1_amd64.deb"), deb[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	srv2, requests := serve(t, map[string][]byte{p.Path: deb})
	if _, err := DebianFiles(t.Context(), []DebianPackage{p}, DebianOptions{Mirror: srv2.URL + "/debian", CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(cache, "libfoo1_1.0-1_amd64.deb")); !bytes.Equal(b, deb) || requests.Load() != 1 {
		t.Errorf("a bad cached file was not replaced by the download (%d requests)", requests.Load())
	}
}

func TestDebianFilesSaysWhenTheMirrorNoLongerServesTheVersion(t *testing.T) {
	deb := libDeb(t)
	p := pin("libfoo1", "pool/main/f/foo/libfoo1_1.0-1_amd64.deb", deb, "usr/lib/libfoo.so.1")
	srv, _ := serve(t, nil)
	_, err := DebianFiles(t.Context(), []DebianPackage{p}, DebianOptions{Mirror: srv.URL + "/debian", CacheDir: t.TempDir()})
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "update the pinned table") {
		t.Fatalf("404: %v", err)
	}
}

func TestDebianFilesRefusesLinksOutOfThePackageAndMissingFiles(t *testing.T) {
	deb := libDeb(t)
	srv, _ := serve(t, map[string][]byte{"pool/libfoo1.deb": deb})
	for file, want := range map[string]string{
		"usr/lib/escape":     "outside the package",
		"usr/lib/loop":       "more than 16 links",
		"usr/lib/libbar.so":  "not in the package",
		"usr/lib":            "a directory",
		"usr/lib/foo/x":      "is a file",
		"usr/lib/libfoo.so1": "not in the package",
	} {
		p := pin("libfoo1", "pool/libfoo1.deb", deb, file)
		_, err := DebianFiles(t.Context(), []DebianPackage{p}, DebianOptions{Mirror: srv.URL + "/debian", CacheDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

func TestArMembersRefusesWhatIsNotADeb(t *testing.T) {
	deb := libDeb(t)
	for name, b := range map[string][]byte{
		"empty":            nil,
		"not ar":           []byte("PK\x03\x04"),
		"truncated header": deb[:30],
		"truncated member": deb[:len(deb)-10],
	} {
		if _, err := arMembers(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m, err := arMembers(deb)
	if err != nil {
		t.Fatal(err)
	}
	if string(m["debian-binary"]) != "2.0\n" || len(m) != 3 {
		t.Errorf("members %v", m)
	}
}

func TestInfinibandDiagsTableIsPinned(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		pkgs, err := InfinibandDiags(arch)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range pkgs {
			if err := checkPackage(p); err != nil {
				t.Errorf("%s: %v", arch, err)
			}
			if p.Arch != arch || !strings.HasSuffix(p.Path, "/"+p.Name+"_"+p.Version+"_"+arch+".deb") {
				t.Errorf("%s: %s %s at %s", arch, p.Name, p.Version, p.Path)
			}
			for _, f := range p.Files {
				if seen[f] {
					t.Errorf("%s: %s twice", arch, f)
				}
				seen[f] = true
			}
		}
		if got := PackageList(pkgs); got != "infiniband-diags=44.0-2 libibmad5=44.0-2 libibumad3=44.0-2 libc6=2.36-9+deb12u14" {
			t.Errorf("%s: %s", arch, got)
		}
	}
	if _, err := InfinibandDiags("riscv64"); err == nil || !strings.Contains(err.Error(), "amd64, arm64") {
		t.Errorf("riscv64: %v", err)
	}
}

func TestRunInfinibandDiagsFailsBeforeCompiling(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	srv, _ := serve(t, nil)
	for args, want := range map[string]string{
		"--arch riscv64":                         "no pinned Debian packages for riscv64",
		"--debian-mirror " + srv.URL + "/debian": "update the pinned table",
	} {
		var out, errOut bytes.Buffer
		start := time.Now()
		err := Run(t.Context(), append([]string{"--version", "0.1.0", "--revision", "abc", "--infiniband-diags", "--debian-cache", t.TempDir(),
			"--out", filepath.Join(t.TempDir(), "x.tar")}, strings.Fields(args)...), none, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: failed after %s: compiled first?", args, d)
		}
	}
}
