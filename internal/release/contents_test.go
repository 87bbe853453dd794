package release

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/image"
)

// writeArchive assembles an image as internal/image does (its Layer,
// Assemble and WriteArchive) and writes the archive into a file.
func writeArchive(t *testing.T, files []image.File, debian *image.DebianLayer) (string, string) {
	t.Helper()
	layer, err := image.Layer(files, testCreated)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Assemble(layer, image.Meta{
		Arch: "amd64", Version: "0.2.0", Revision: "abc", Source: "https://github.com/railyard-io/railyard",
		Created: testCreated, Cmd: []string{"/usr/local/bin/printversion"}, Debian: debian,
	})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := image.WriteArchive(f, img, "ghcr.io/railyard-io/railyard:0.2.0", testCreated); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out, digest.String()
}

const libcStanza = `Package: libc6
Status: install ok installed
Source: glibc
Version: 2.36-9+deb12u14
Architecture: amd64
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Depends: libgcc-s1
Description: GNU C Library: Shared libraries
`

func TestReadArchiveFindsGoBinariesAndDebianPackages(t *testing.T) {
	bin := tinyBinary(t)
	files := []image.File{{Path: image.BinDir + "/printversion", Mode: 0o755, Data: bin}}
	debFiles := []image.File{
		{Path: StatusDir + "/libc6", Mode: 0o644, Data: []byte(libcStanza)},
		{Path: "usr/share/doc/libc6/copyright", Mode: 0o644, Data: []byte("Format: ...")},
		{Path: "usr/lib/x86_64-linux-gnu/libc.so.6", Mode: 0o644, Data: []byte("not read")},
	}
	debLayer, err := image.Layer(debFiles, testCreated)
	if err != nil {
		t.Fatal(err)
	}
	archive, digest := writeArchive(t, files, &image.DebianLayer{Tar: debLayer, Packages: []image.DebianPackage{{Name: "libc6", Version: "2.36-9+deb12u14"}}})

	c, err := ReadArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "ghcr.io/railyard-io/railyard:0.2.0" || c.Digest != digest || c.OS != "linux" || c.Arch != "amd64" || c.Labels[image.KeyRevision] != "abc" {
		t.Errorf("image %q %q %s/%s labels %v; want digest %s", c.Name, c.Digest, c.OS, c.Arch, c.Labels, digest)
	}
	if len(c.Binaries) != 1 {
		t.Fatalf("binaries %+v", c.Binaries)
	}
	b := c.Binaries[0]
	if b.Path != "usr/local/bin/printversion" || b.Info.Main.Path != ModulePath || !strings.HasPrefix(b.Info.GoVersion, "go1.") || len(b.SHA256) != 64 {
		t.Errorf("binary %s: main %q, go %q, sha256 %q", b.Path, b.Info.Main.Path, b.Info.GoVersion, b.SHA256)
	}
	want := []Package{{
		Name: "libc6", Version: "2.36-9+deb12u14", Arch: "amd64", Source: "glibc",
		Maintainer: "GNU Libc Maintainers <debian-glibc@lists.debian.org>", Depends: []string{"libgcc-s1"},
		Copyright: "usr/share/doc/libc6/copyright",
	}}
	if diff := cmp.Diff(want, c.Packages); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
}

func TestReadArchiveRefusesANonGoProgramAndATamperedBlob(t *testing.T) {
	archive, _ := writeArchive(t, []image.File{{Path: image.BinDir + "/script", Mode: 0o755, Data: []byte("#!/bin/sh\n")}}, nil)
	if _, err := ReadArchive(archive); err == nil || !strings.Contains(err.Error(), "not a Go binary") {
		t.Errorf("a shell script in %s: %v", image.BinDir, err)
	}
	if _, err := ReadArchive(filepath.Join(t.TempDir(), "absent.tar")); err == nil {
		t.Error("an absent archive read")
	}
	entries := map[string][]byte{"index.json": []byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:` + strings.Repeat("0", 64) + `","size":2}]}`)}
	entries["blobs/sha256/"+strings.Repeat("0", 64)] = []byte("{}")
	if _, err := readLayout(entries); err == nil || !strings.Contains(err.Error(), "content has sha256") {
		t.Errorf("a blob that is not its digest: %v", err)
	}
}

// TestSBOMOfTheRealInfinibandDiagsPackages reads the status stanzas of the
// pinned Debian packages (from the cache `make images-infiniband` fills,
// or deb.debian.org; skipped when neither has them) through an archive.
func TestSBOMOfTheRealInfinibandDiagsPackages(t *testing.T) {
	pkgs, err := image.InfinibandDiags("amd64")
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(repoRoot(t), "_output", "debs")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	debFiles, err := image.DebianFiles(ctx, pkgs, image.DebianOptions{CacheDir: cache})
	if errors.Is(err, image.ErrDownload) {
		t.Skipf("the pinned Debian packages are neither in %s nor downloadable: %v", cache, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Their stanzas and copyright files; the libraries' bytes do not matter here.
	var keep []image.File
	for _, f := range debFiles {
		if strings.HasPrefix(f.Path, StatusDir+"/") || strings.HasSuffix(f.Path, "/copyright") {
			keep = append(keep, f)
		}
	}
	debLayer, err := image.Layer(keep, testCreated)
	if err != nil {
		t.Fatal(err)
	}
	archive, _ := writeArchive(t, []image.File{{Path: image.BinDir + "/printversion", Mode: 0o755, Data: tinyBinary(t)}}, &image.DebianLayer{Tar: debLayer, Packages: pkgs})
	c, err := ReadArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	type nv struct{ Name, Version, Arch, Source, Copyright string }
	var got, want []nv
	for _, p := range c.Packages {
		got = append(got, nv{p.Name, p.Version, p.Arch, p.Source, p.Copyright})
	}
	source := map[string]string{"libc6": "glibc"}
	for _, p := range pkgs {
		src := source[p.Name]
		if src == "" {
			src = "rdma-core"
		}
		want = append(want, nv{p.Name, p.Version, p.Arch, src, "usr/share/doc/" + p.Name + "/copyright"})
	}
	slices.SortFunc(want, func(a, b nv) int { return strings.Compare(a.Name, b.Name) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if DebianRelease(c.Packages) != "12" {
		t.Errorf("Debian release %q, want 12 (bookworm)", DebianRelease(c.Packages))
	}
	bom, err := SBOM(c, SBOMOptions{Version: "0.2.0", Created: testCreated})
	if err != nil {
		t.Fatal(err)
	}
	if libc, ok := component(bom, "libc6"); !ok || !strings.Contains(libc.PackageURL, "distro=debian-12&upstream=glibc") {
		t.Errorf("libc6: %+v", libc)
	}
}
