package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/image"
)

// Options are the inputs of Release.
type Options struct {
	// Dir is the module root the binaries are built from.
	Dir string
	// Version is the release's semantic version, without a "v"
	// ("0.2.0", "0.3.0-rc.1"): image tags, chart version and appVersion,
	// what `railyard version` prints.
	Version string
	// Revision is the source revision (the git commit).
	Revision string
	// Created is the commit's time (SOURCE_DATE_EPOCH): every timestamp
	// in every artifact.
	Created time.Time
	// Out is the release directory: absent, empty, or holding a previous
	// release (whose listed files are replaced).
	Out string
	// Arches are the images' GOARCHes; InfinibandArches those that also
	// get the infiniband-diags variant (a subset of Arches).
	Arches           []string
	InfinibandArches []string
	// Chart is the Helm chart's directory.
	Chart string
	// Repository names the images (ghcr.io/railyard-io/railyard).
	Repository string
	// Source is the OCI source label, the repository's URL.
	Source string
	// Debian says where the infiniband-diags layer's packages come from.
	Debian image.DebianOptions
	// Progress gets a line per step (nil: none).
	Progress io.Writer
}

// Kinds of artifact.
const (
	KindImage     = "image"
	KindSBOM      = "sbom"
	KindChart     = "chart"
	KindChecksums = "checksums"
)

// Artifact is one file of a release.
type Artifact struct {
	Name   string // file name in the release directory
	Kind   string
	Size   int64
	SHA256 string // of the file (empty for SHA256SUMS itself)
	// Of an image: its name with tag, platform and manifest digest.
	Image    string
	Platform string
	Digest   string
}

// semverRE is a semantic version without build metadata ('+' is not
// allowed in an image tag).
var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// CheckVersion accepts a release version: X.Y.Z with an optional
// pre-release ("-rc.1"), no leading "v" and no build metadata.
func CheckVersion(v string) error {
	if semverRE.MatchString(v) {
		return nil
	}
	if strings.HasPrefix(v, "v") && semverRE.MatchString(v[1:]) {
		return fmt.Errorf("version %q: give it without the leading v (%s); the git tag is v%s", v, v[1:], v[1:])
	}
	return fmt.Errorf("version %q: want a semantic version X.Y.Z or X.Y.Z-PRERELEASE (no build metadata)", v)
}

func (o Options) check() error {
	var errs []error
	if err := CheckVersion(o.Version); err != nil {
		errs = append(errs, err)
	}
	if o.Revision == "" {
		errs = append(errs, fmt.Errorf("no revision"))
	}
	if o.Out == "" {
		errs = append(errs, fmt.Errorf("no output directory"))
	}
	if len(o.Arches) == 0 {
		errs = append(errs, fmt.Errorf("no architectures"))
	}
	for i, a := range o.Arches {
		if slices.Contains(o.Arches[:i], a) {
			errs = append(errs, fmt.Errorf("architecture %s given twice", a))
		}
	}
	for _, a := range o.InfinibandArches {
		if !slices.Contains(o.Arches, a) {
			errs = append(errs, fmt.Errorf("infiniband-diags architecture %s is not among the image architectures %v", a, o.Arches))
		}
	}
	return errors.Join(errs...)
}

// ImageFile is the archive name of an image tag and architecture
// ("railyard-0.2.0-linux-amd64.tar"); its SBOM is SBOMFile of it.
func ImageFile(tag, arch string) string { return "railyard-" + tag + "-linux-" + arch + ".tar" }

// SBOMFile is the SBOM's name of an image archive
// ("railyard-0.2.0-linux-amd64.cdx.json").
func SBOMFile(archive string) string { return strings.TrimSuffix(archive, ".tar") + ".cdx.json" }

// Release builds every artifact into o.Out and writes SHA256SUMS last.
// It returns the artifacts in the order SHA256SUMS lists them, then
// SHA256SUMS.
func Release(ctx context.Context, o Options) ([]Artifact, error) {
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	if err := prepareOut(o.Out); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	var arts []Artifact
	for _, arch := range o.Arches {
		variants := []bool{false}
		if slices.Contains(o.InfinibandArches, arch) {
			variants = append(variants, true)
		}
		for _, ib := range variants {
			a, err := o.image(ctx, arch, ib)
			if err != nil {
				return nil, fmt.Errorf("release: %w", err)
			}
			arts = append(arts, a...)
		}
	}
	o.progress("chart %s", o.Chart)
	name, tgz, err := PackageChart(o.Chart, o.Version, o.Created)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, name), tgz, 0o644); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	arts = append(arts, Artifact{Name: name, Kind: KindChart})

	names := make([]string, len(arts))
	for i, a := range arts {
		names[i] = a.Name
	}
	sums, err := Sums(o.Out, names)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	parsed, err := ParseSums(sums)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	for i := range arts {
		arts[i].SHA256 = parsed[arts[i].Name]
		st, err := os.Stat(filepath.Join(o.Out, arts[i].Name))
		if err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
		arts[i].Size = st.Size()
	}
	slices.SortFunc(arts, func(a, b Artifact) int { return strings.Compare(a.Name, b.Name) })
	if err := atomicfile.WriteFile(filepath.Join(o.Out, SumsFile), sums, 0o644); err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	return append(arts, Artifact{Name: SumsFile, Kind: KindChecksums, Size: int64(len(sums))}), nil
}

// image builds one image archive and its SBOM.
func (o Options) image(ctx context.Context, arch string, ib bool) ([]Artifact, error) {
	tag := o.Version
	if ib {
		tag += image.InfinibandDiagsTagSuffix
	}
	file := ImageFile(tag, arch)
	o.progress("image %s (linux/%s)", file, arch)
	res, err := image.Build(ctx, image.Options{
		Dir: o.Dir, Packages: image.DefaultPackages(), Arch: arch, Version: o.Version, Revision: o.Revision,
		Source: o.Source, Created: o.Created, Name: o.Repository + ":" + tag, Out: filepath.Join(o.Out, file),
		InfinibandDiags: ib, Debian: o.Debian,
	})
	if err != nil {
		return nil, err
	}
	c, err := ReadArchive(filepath.Join(o.Out, file))
	if err != nil {
		return nil, err
	}
	if c.Digest != res.Digest.String() {
		return nil, fmt.Errorf("%s: index.json names %s, the build made %s", file, c.Digest, res.Digest)
	}
	bom, err := SBOM(c, SBOMOptions{Version: o.Version, Created: o.Created})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	doc, err := EncodeSBOM(bom)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	sbom := SBOMFile(file)
	if err := atomicfile.WriteFile(filepath.Join(o.Out, sbom), doc, 0o644); err != nil {
		return nil, err
	}
	return []Artifact{
		{Name: file, Kind: KindImage, Image: res.Name, Platform: "linux/" + arch, Digest: c.Digest},
		{Name: sbom, Kind: KindSBOM, Image: res.Name, Platform: "linux/" + arch, Digest: c.Digest},
	}, nil
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "release: "+format+"\n", args...)
	}
}

// prepareOut makes the release directory ready: created when absent; a
// previous release in it (SHA256SUMS and the files it lists) removed;
// anything else in it refused, so a release never mixes with other files
// and never deletes what it did not write.
func prepareOut(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		return fmt.Errorf("%s is not empty and holds no previous release (%s): give an empty or new directory", dir, SumsFile)
	}
	sums, err := ParseSums(raw)
	if err != nil {
		return fmt.Errorf("%s: previous release: %w", dir, err)
	}
	for _, e := range entries {
		if _, ok := sums[e.Name()]; !ok && e.Name() != SumsFile {
			return fmt.Errorf("%s holds %s, which its previous release's %s does not list: give an empty or new directory", dir, e.Name(), SumsFile)
		}
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("removing the previous release: %w", err)
		}
	}
	return nil
}
