package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var testTime = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

func testFiles() []File {
	return []File{
		{Path: "usr/local/bin/railyard-agent", Mode: 0o755, Data: []byte("agent binary")},
		{Path: "usr/local/bin/railyard-cni", Mode: 0o755, Data: []byte("cni binary")},
		{Path: "etc/railyard/README", Mode: 0o644, Data: []byte("hello")},
	}
}

type entry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	Owner    string
	MTime    time.Time
	Data     string
}

func readTar(t *testing.T, b []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname + h.Gname, h.ModTime.UTC(), string(data)})
	}
}

func TestLayerHasSortedEntriesOwnedByRootWithFixedTimes(t *testing.T) {
	layer, err := Layer(testFiles(), testTime.Add(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	d := func(n string) entry { return entry{n, tar.TypeDir, 0o755, 0, 0, "", testTime, ""} }
	f := func(n string, mode int64, data string) entry {
		return entry{n, tar.TypeReg, mode, 0, 0, "", testTime, data}
	}
	want := []entry{
		d("etc/"), d("etc/railyard/"), f("etc/railyard/README", 0o644, "hello"),
		d("usr/"), d("usr/local/"), d("usr/local/bin/"),
		f("usr/local/bin/railyard-agent", 0o755, "agent binary"), f("usr/local/bin/railyard-cni", 0o755, "cni binary"),
	}
	if diff := cmp.Diff(want, readTar(t, layer)); diff != "" {
		t.Fatalf("layer entries (-want +got):\n%s", diff)
	}
	// Input order does not matter.
	files := testFiles()
	files[0], files[2] = files[2], files[0]
	again, err := Layer(files, testTime)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(layer, again) {
		t.Fatal("same files in another order gave another layer")
	}
}

func TestLayerRejectsBadPaths(t *testing.T) {
	for _, files := range [][]File{
		{{Path: "/abs", Mode: 0o644}},
		{{Path: "../up", Mode: 0o644}},
		{{Path: "a//b", Mode: 0o644}},
		{{Path: ".", Mode: 0o644}},
		{{Path: "a", Mode: 0o644}, {Path: "a", Mode: 0o644}},
		{{Path: "a", Mode: 0o644}, {Path: "a/b", Mode: 0o644}},
		{{Path: "a", Mode: 0o100644}},
	} {
		if _, err := Layer(files, testTime); err == nil {
			t.Errorf("%+v accepted", files)
		}
	}
}

func testMeta() Meta {
	return Meta{Arch: "amd64", Version: "0.1.0", Revision: "0123abcd", Source: "https://github.com/railyard-io/railyard", Created: testTime, Cmd: []string{"/usr/local/bin/railyard-agent"}}
}

func archive(t *testing.T, files []File, m Meta) ([]byte, string) {
	t.Helper()
	layer, err := Layer(files, m.Created)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Assemble(layer, m)
	if err != nil {
		t.Fatal(err)
	}
	dg, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteArchive(&buf, img, "ghcr.io/railyard-io/railyard:0.1.0", m.Created); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), dg.String()
}

// TestSameInputsSameDigestAndBytes: the archive depends only on the files'
// paths, modes and contents and on Meta; a different revision changes it.
func TestSameInputsSameDigestAndBytes(t *testing.T) {
	a, da := archive(t, testFiles(), testMeta())
	files := testFiles()
	files[0], files[1] = files[1], files[0]
	for i := range files {
		files[i].Data = append([]byte(nil), files[i].Data...) // other backing arrays
	}
	b, db := archive(t, files, testMeta())
	if da != db || !bytes.Equal(a, b) {
		t.Fatalf("digests %s %s, archives equal: %v", da, db, bytes.Equal(a, b))
	}
	m := testMeta()
	m.Revision = "0123abce"
	if _, dc := archive(t, testFiles(), m); dc == da {
		t.Fatal("another revision gave the same digest")
	}
	changed := testFiles()
	changed[1].Data = []byte("cni binary 2")
	if _, dc := archive(t, changed, testMeta()); dc == da {
		t.Fatal("another binary gave the same digest")
	}
}

// TestArchiveIsAnOCILayoutAndADockerArchive reads the archive back both
// ways with go-containerregistry: as an OCI image layout (what ctr import
// reads) and through manifest.json (what docker load reads).
func TestArchiveIsAnOCILayoutAndADockerArchive(t *testing.T) {
	b, digest := archive(t, testFiles(), testMeta())
	entries := readTar(t, b)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
		if e.UID != 0 || e.GID != 0 || e.Owner != "" || !e.MTime.Equal(testTime) {
			t.Errorf("entry %s: uid %d gid %d owner %q mtime %v", e.Name, e.UID, e.GID, e.Owner, e.MTime)
		}
	}
	if len(names) != 8 || names[5] != "blobs/sha256/"+strings.TrimPrefix(digest, "sha256:") {
		t.Fatalf("archive entries %v (manifest %s)", names, digest)
	}
	if diff := cmp.Diff([]string{"oci-layout", "index.json", "manifest.json", "blobs/", "blobs/sha256/"}, names[:5]); diff != "" {
		t.Fatalf("archive entries (-want +got):\n%s", diff)
	}
	for _, e := range entries[5:] { // every blob is named by its sha256
		sum := sha256.Sum256([]byte(e.Data))
		if e.Name != "blobs/sha256/"+hex.EncodeToString(sum[:]) {
			t.Errorf("blob %s has sha256 %x", e.Name, sum)
		}
	}

	dir := t.TempDir()
	for _, e := range entries {
		p := filepath.Join(dir, e.Name)
		if e.Type == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(e.Data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != digest ||
		im.Manifests[0].Annotations["io.containerd.image.name"] != "ghcr.io/railyard-io/railyard:0.1.0" ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "0.1.0" {
		t.Fatalf("index.json: %+v", im.Manifests)
	}
	fromLayout, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	man, err := fromLayout.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	wantAnn := map[string]string{
		KeySource: "https://github.com/railyard-io/railyard", KeyRevision: "0123abcd", KeyVersion: "0.1.0",
		KeyTitle: "railyard", KeyCreated: "2026-08-01T12:00:00Z",
	}
	if man.MediaType != "application/vnd.oci.image.manifest.v1+json" || man.Config.MediaType != "application/vnd.oci.image.config.v1+json" ||
		len(man.Layers) != 1 || man.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("manifest %+v", man)
	}
	if diff := cmp.Diff(wantAnn, man.Annotations); diff != "" {
		t.Fatalf("manifest annotations (-want +got):\n%s", diff)
	}

	tag, err := name.NewTag("ghcr.io/railyard-io/railyard:0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(tarPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fromDocker, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	cfg, err := fromDocker.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || cfg.Architecture != "amd64" || cfg.OS != "linux" || !cfg.Created.Time.Equal(testTime) {
		t.Fatalf("config from manifest.json: %+v", cfg)
	}
	type runConfig struct {
		Labels map[string]string
		Cmd    []string
		Env    []string
	}
	wantRun := runConfig{Labels: wantAnn, Cmd: []string{"/usr/local/bin/railyard-agent"}, Env: []string{"PATH=/usr/local/bin"}}
	if diff := cmp.Diff(wantRun, runConfig{cfg.Config.Labels, cfg.Config.Cmd, cfg.Config.Env}); diff != "" {
		t.Fatalf("config from manifest.json (-want +got):\n%s", diff)
	}
	dockerLayers, err := fromDocker.Layers()
	if err != nil || len(dockerLayers) != 1 {
		t.Fatalf("layers %v %v", dockerLayers, err)
	}
	rc, err := dockerLayers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	layerTar, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Layer(testFiles(), testTime)
	if !bytes.Equal(layerTar, want) {
		t.Fatal("layer read through manifest.json differs from the one written")
	}
	var dm []map[string]any
	if err := json.Unmarshal([]byte(entries[2].Data), &dm); err != nil || len(dm) != 1 {
		t.Fatalf("manifest.json %s: %v", entries[2].Data, err)
	}
	if diff := cmp.Diff([]any{"ghcr.io/railyard-io/railyard:0.1.0"}, dm[0]["RepoTags"]); diff != "" {
		t.Fatalf("manifest.json RepoTags (-want +got):\n%s", diff)
	}
}

func TestParseRefNeedsRegistryAndTag(t *testing.T) {
	for _, ok := range []string{"ghcr.io/railyard-io/railyard:0.1.0", "localhost:5000/railyard:dev", "registry.local/x:1"} {
		if _, err := ParseRef(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"railyard:0.1.0", "railyard-io/railyard:0.1.0", "ghcr.io/railyard-io/railyard", "ghcr.io/x@sha256:" + strings.Repeat("0", 64), ""} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestGoBuildArgsAreStaticTrimmedAndStamped(t *testing.T) {
	args, env, err := GoBuildArgs(BuildOptions{Packages: []string{"./cmd/a"}, Arch: "arm64", Version: "0.1.0", Revision: "abc", OutDir: "/o"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags",
		"-s -w -buildid= -X github.com/railyard-io/railyard/internal/version.version=0.1.0 -X github.com/railyard-io/railyard/internal/version.revision=abc",
		"-o", "/o/", "./cmd/a"}
	wantEnv := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0"}
	if diff := cmp.Diff(wantArgs, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantEnv, env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	for _, bad := range []BuildOptions{
		{Packages: []string{"./x"}, Version: "0.1 .0", Revision: "abc"},
		{Packages: []string{"./x"}, Version: "0.1.0", Revision: "a'b"},
		{Packages: []string{"./x"}, Version: "", Revision: "abc"},
		{Version: "0.1.0", Revision: "abc"},
	} {
		if _, _, err := GoBuildArgs(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
