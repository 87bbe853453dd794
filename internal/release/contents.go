package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/railyard-io/railyard/internal/image"
)

// StatusDir is where an image describes its Debian packages, one dpkg
// control stanza per file, as distroless images do and internal/image's
// Debian layer writes it; scanners read it too.
const StatusDir = "var/lib/dpkg/status.d"

// Contents is what an image archive holds, as its SBOM describes it.
type Contents struct {
	// Name is the image's name with its tag, from index.json.
	Name string
	// Digest is the manifest's ("sha256:..."): what a registry shows and
	// the chart's image.digest pins.
	Digest   string
	OS, Arch string
	Labels   map[string]string
	// Binaries are the Go programs under image.BinDir, by path.
	Binaries []Binary
	// Packages are the Debian packages of the status stanzas, by name.
	Packages []Package
}

// Binary is one Go program of the image.
type Binary struct {
	Path   string // in the image: "usr/local/bin/railyard-agent"
	SHA256 string
	Info   *debug.BuildInfo
}

// Package is a Debian package as its dpkg status stanza names it.
type Package struct {
	Name, Version, Arch string
	// Source is the source package (the package's name when the stanza
	// has no Source field); a trailing "(version)" is dropped.
	Source     string
	Maintainer string
	Homepage   string
	// Depends names the packages it depends on (first choice of each
	// alternative, without versions or architectures).
	Depends []string
	// Copyright is the path of its copyright file in the image, or empty
	// when the image has none.
	Copyright string
}

// maxArchive bounds an archive read into memory (a release's are ~60 MiB).
const maxArchive = 1 << 30

// ReadArchive reads an image archive written by internal/image (an OCI
// image layout in a tar): the manifest index.json names, checked against
// its digest, the config and every layer, whose files it walks.
func ReadArchive(file string) (Contents, error) {
	f, err := os.Open(file)
	if err != nil {
		return Contents{}, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	entries, err := tarEntries(io.LimitReader(f, maxArchive))
	if err != nil {
		return Contents{}, fmt.Errorf("archive %s: %w", file, err)
	}
	c, err := readLayout(entries)
	if err != nil {
		return Contents{}, fmt.Errorf("archive %s: %w", file, err)
	}
	return c, nil
}

// tarEntries returns a tar's regular files by name.
func tarEntries(r io.Reader) (map[string][]byte, error) {
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.Name, err)
		}
		out[path.Clean(h.Name)] = b
	}
}

// blob returns the blob of a digest, checked against it.
func blob(entries map[string][]byte, h v1.Hash) ([]byte, error) {
	if h.Algorithm != "sha256" {
		return nil, fmt.Errorf("blob %s: not sha256", h)
	}
	b, ok := entries["blobs/sha256/"+h.Hex]
	if !ok {
		return nil, fmt.Errorf("blob %s: missing", h)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != h.Hex {
		return nil, fmt.Errorf("blob %s: content has sha256 %x", h, sum)
	}
	return b, nil
}

func readLayout(entries map[string][]byte) (Contents, error) {
	raw, ok := entries["index.json"]
	if !ok {
		return Contents{}, fmt.Errorf("no index.json: not an OCI image layout")
	}
	index, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return Contents{}, fmt.Errorf("index.json: %w", err)
	}
	if len(index.Manifests) != 1 {
		return Contents{}, fmt.Errorf("index.json: %d manifests, want 1", len(index.Manifests))
	}
	desc := index.Manifests[0]
	mb, err := blob(entries, desc.Digest)
	if err != nil {
		return Contents{}, fmt.Errorf("manifest: %w", err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(mb))
	if err != nil {
		return Contents{}, fmt.Errorf("manifest: %w", err)
	}
	cb, err := blob(entries, m.Config.Digest)
	if err != nil {
		return Contents{}, fmt.Errorf("config: %w", err)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(cb))
	if err != nil {
		return Contents{}, fmt.Errorf("config: %w", err)
	}
	c := Contents{
		Name: desc.Annotations["io.containerd.image.name"], Digest: desc.Digest.String(),
		OS: cfg.OS, Arch: cfg.Architecture, Labels: cfg.Config.Labels,
	}
	files := map[string][]byte{}
	for i, l := range m.Layers {
		lb, err := blob(entries, l.Digest)
		if err != nil {
			return Contents{}, fmt.Errorf("layer %d: %w", i, err)
		}
		if err := layerFiles(lb, files); err != nil {
			return Contents{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	if err := c.fromFiles(files); err != nil {
		return Contents{}, err
	}
	return c, nil
}

// layerFiles adds a gzip layer's regular files to files (a later layer's
// file replaces an earlier one's, as a runtime unpacks them).
func layerFiles(gz []byte, files map[string][]byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	entries, err := tarEntries(zr)
	if err != nil {
		return err
	}
	for name, b := range entries {
		files[name] = b
	}
	return nil
}

// fromFiles finds the Go binaries and the Debian packages among an
// image's files.
func (c *Contents) fromFiles(files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data := files[name]
		switch {
		case path.Dir(name) == image.BinDir:
			info, err := buildinfo.Read(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("%s: not a Go binary with build information: %w", name, err)
			}
			sum := sha256.Sum256(data)
			c.Binaries = append(c.Binaries, Binary{Path: name, SHA256: hex.EncodeToString(sum[:]), Info: info})
		case path.Dir(name) == StatusDir:
			p, err := ParseStatus(data)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if cp := "usr/share/doc/" + p.Name + "/copyright"; files[cp] != nil {
				p.Copyright = cp
			}
			c.Packages = append(c.Packages, p)
		}
	}
	sort.Slice(c.Packages, func(i, j int) bool { return c.Packages[i].Name < c.Packages[j].Name })
	return nil
}

// ParseStatus reads one dpkg status stanza (deb-control(5) fields;
// continuation lines ignored).
func ParseStatus(b []byte) (Package, error) {
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return Package{}, fmt.Errorf("status: line %q has no field name", clip(line))
		}
		fields[k] = strings.TrimSpace(v)
	}
	p := Package{
		Name: fields["Package"], Version: fields["Version"], Arch: fields["Architecture"],
		Maintainer: fields["Maintainer"], Homepage: fields["Homepage"],
	}
	if p.Name == "" || p.Version == "" || p.Arch == "" {
		return Package{}, fmt.Errorf("status: want Package, Version and Architecture; got %q, %q, %q", p.Name, p.Version, p.Arch)
	}
	p.Source, _, _ = strings.Cut(fields["Source"], " ")
	if p.Source == "" {
		p.Source = p.Name
	}
	for _, dep := range strings.Split(fields["Depends"]+","+fields["Pre-Depends"], ",") {
		first, _, _ := strings.Cut(dep, "|")
		name, _, _ := strings.Cut(strings.TrimSpace(first), " ")
		name, _, _ = strings.Cut(name, ":")
		name, _, _ = strings.Cut(name, "(")
		if name != "" {
			p.Depends = append(p.Depends, name)
		}
	}
	slices.Sort(p.Depends)
	p.Depends = slices.Compact(p.Depends)
	return p, nil
}

// clip bounds text quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
