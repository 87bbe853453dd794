package image

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// DebianPackage is one Debian package, pinned: the layer takes Files from
// the .deb at Path under the mirror, whose bytes must hash to SHA256.
type DebianPackage struct {
	Name    string
	Version string
	Arch    string // Debian architecture: amd64, arm64
	// Path of the .deb under the mirror (the Packages index's Filename).
	Path   string
	Size   int64
	SHA256 string
	// Files are the paths in the package (data.tar, without "./") the
	// layer takes, at the same path, as regular files: a symbolic link is
	// followed inside the package (libibmad.so.5 -> libibmad.so.5.3.44.0)
	// and the layer gets the target's bytes under the link's name.
	// The package's usr/share/doc/<Name>/copyright is always taken too.
	Files []string
}

// DefaultDebianMirror is where DebianFiles downloads packages from.
const DefaultDebianMirror = "https://deb.debian.org/debian"

// InfinibandDiagsTagSuffix is appended to the version to name the image
// with infiniband-diags (ghcr.io/railyard-io/railyard:0.1.0-infiniband-diags).
const InfinibandDiagsTagSuffix = "-infiniband-diags"

// infinibandDiags is the pinned table of hack/image --infiniband-diags:
// exactly what smpquery loads. Versions, paths, sizes and SHA256 sums are
// copied from Debian 12 (bookworm, point release 12.15) main's Packages
// indexes for amd64 (apt-cache show, from the index apt verified against
// the InRelease of 2026-07-11 signed by the bookworm release key) and
// arm64 (binary-arm64/Packages.xz, whose SHA256 that InRelease lists).
// The files are the ELF closure of usr/sbin/smpquery read from the real
// packages (readelf -d: NEEDED libibmad.so.5, libibumad.so.3, libc.so.6;
// the program interpreter), which TestInfinibandDiagsLayerIsClosed
// checks; infiniband-diags' other tools, libibnetdisc5 (not linked by
// smpquery) and the rest of libc6 are left out.
//
// deb.debian.org keeps only a suite's current version of a package: when a
// point release replaces libc6, the download fails with 404 and the table
// must be updated from the new Packages index (a cached .deb under
// _output/debs still builds).
var infinibandDiags = map[string][]DebianPackage{
	"amd64": {
		{
			Name: "infiniband-diags", Version: "44.0-2", Arch: "amd64",
			Path: "pool/main/r/rdma-core/infiniband-diags_44.0-2_amd64.deb", Size: 226600,
			SHA256: "97d78f4fb1e4815f09fd15a4943f46a24e747f606fd190b3e1426d39309b806c",
			Files:  []string{"usr/sbin/smpquery"},
		},
		{
			Name: "libibmad5", Version: "44.0-2", Arch: "amd64",
			Path: "pool/main/r/rdma-core/libibmad5_44.0-2_amd64.deb", Size: 42508,
			SHA256: "c3024c29d87e068b4969730223f9984942d82c168739a83a4963fcff4c10047f",
			Files:  []string{"usr/lib/x86_64-linux-gnu/libibmad.so.5"},
		},
		{
			Name: "libibumad3", Version: "44.0-2", Arch: "amd64",
			Path: "pool/main/r/rdma-core/libibumad3_44.0-2_amd64.deb", Size: 27420,
			SHA256: "0297f4f6a29d7870ea3c8c85b2b2bddce2b665a6e7b17114dce82a5087442a32",
			Files:  []string{"usr/lib/x86_64-linux-gnu/libibumad.so.3"},
		},
		{
			Name: "libc6", Version: "2.36-9+deb12u14", Arch: "amd64",
			Path: "pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb", Size: 2759320,
			SHA256: "ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf",
			Files:  []string{"lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6"},
		},
	},
	"arm64": {
		{
			Name: "infiniband-diags", Version: "44.0-2", Arch: "arm64",
			Path: "pool/main/r/rdma-core/infiniband-diags_44.0-2_arm64.deb", Size: 218224,
			SHA256: "dfd13b7e762aefc57bd675968eca705e57faba3b909d8fb1aa2af156a904d970",
			Files:  []string{"usr/sbin/smpquery"},
		},
		{
			Name: "libibmad5", Version: "44.0-2", Arch: "arm64",
			Path: "pool/main/r/rdma-core/libibmad5_44.0-2_arm64.deb", Size: 40476,
			SHA256: "11556f768d3e2d5fabb08c4d1ce817a4c48cf55ff90e585a137aafa9bff7b57e",
			Files:  []string{"usr/lib/aarch64-linux-gnu/libibmad.so.5"},
		},
		{
			Name: "libibumad3", Version: "44.0-2", Arch: "arm64",
			Path: "pool/main/r/rdma-core/libibumad3_44.0-2_arm64.deb", Size: 26528,
			SHA256: "e1843cb05b87a8cd84c66524581b1ceb53fec524e92a2e276647c4841f6d6095",
			Files:  []string{"usr/lib/aarch64-linux-gnu/libibumad.so.3"},
		},
		{
			Name: "libc6", Version: "2.36-9+deb12u14", Arch: "arm64",
			Path: "pool/main/g/glibc/libc6_2.36-9+deb12u14_arm64.deb", Size: 2324660,
			SHA256: "01f4330719fd4f65580e16ea5a0527f372fca750e8f588d26deaf09f2d3b1cf4",
			Files:  []string{"lib/ld-linux-aarch64.so.1", "lib/aarch64-linux-gnu/libc.so.6"},
		},
	},
}

// InfinibandDiags returns the pinned packages of the infiniband-diags
// layer for a GOARCH (a copy: callers may change it).
func InfinibandDiags(arch string) ([]DebianPackage, error) {
	pkgs, ok := infinibandDiags[arch]
	if !ok {
		known := make([]string, 0, len(infinibandDiags))
		for a := range infinibandDiags {
			known = append(known, a)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("infiniband-diags: no pinned Debian packages for %s (only %s)", arch, strings.Join(known, ", "))
	}
	out := make([]DebianPackage, len(pkgs))
	for i, p := range pkgs {
		p.Files = append([]string(nil), p.Files...)
		out[i] = p
	}
	return out, nil
}

// DebianPath is the PATH of an image with a Debian layer: smpquery is in
// /usr/sbin.
const DebianPath = "/usr/local/bin:/usr/sbin"

// statusDir is where the layer describes each package for scanners: one
// control stanza per file, as distroless images have it (Trivy, Grype and
// Syft read var/lib/dpkg/status.d/).
const statusDir = "var/lib/dpkg/status.d"

// PackageList names packages as "name=version" separated by spaces, in
// the order given: the image's LabelDebianPackages.
func PackageList(pkgs []DebianPackage) string {
	s := make([]string, len(pkgs))
	for i, p := range pkgs {
		s[i] = p.Name + "=" + p.Version
	}
	return strings.Join(s, " ")
}

// DebianLayerTar returns the uncompressed layer of pkgs' files
// (DebianFiles), deterministic as Layer makes it.
func DebianLayerTar(ctx context.Context, pkgs []DebianPackage, o DebianOptions, mtime time.Time) ([]byte, error) {
	files, err := DebianFiles(ctx, pkgs, o)
	if err != nil {
		return nil, err
	}
	return Layer(files, mtime)
}
