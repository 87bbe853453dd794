package image

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/pflag"
)

// Options are the inputs of Build.
type Options struct {
	Dir      string // module root
	Packages []string
	Arch     string
	Version  string
	Revision string
	Source   string
	Created  time.Time
	Name     string // image name with registry and tag
	Out      string // archive path
	// InfinibandDiags adds a second layer with infiniband-diags' smpquery
	// and what it loads, from pinned Debian packages (InfinibandDiags).
	InfinibandDiags bool
	// Debian says where those packages come from.
	Debian DebianOptions
}

// Result describes a built archive.
type Result struct {
	Name     string
	Digest   v1.Hash          // manifest digest, what a registry or containerd shows
	Archive  int64            // bytes of the tar
	Layer    int64            // compressed layer
	Unpacked int64            // uncompressed layer
	Sizes    map[string]int64 // binary name -> bytes
	// Of the Debian layer (--infiniband-diags), included in Layer and
	// Unpacked above: its compressed and uncompressed sizes, its packages.
	DebianLayer    int64
	DebianUnpacked int64
	Packages       []DebianPackage
}

// Build compiles the binaries, assembles the image and writes the archive
// to o.Out (through a temporary file and a rename: a failed build leaves
// no partial archive).
func Build(ctx context.Context, o Options) (Result, error) {
	if _, err := ParseRef(o.Name); err != nil {
		return Result{}, err
	}
	// The Debian layer first: a missing package or an unreachable mirror
	// fails before the binaries are compiled.
	var debian *DebianLayer
	if o.InfinibandDiags {
		pkgs, err := InfinibandDiags(o.Arch)
		if err != nil {
			return Result{}, err
		}
		debTar, err := DebianLayerTar(ctx, pkgs, o.Debian, o.Created)
		if err != nil {
			return Result{}, err
		}
		debian = &DebianLayer{Tar: debTar, Packages: pkgs}
	}
	tmp, err := os.MkdirTemp("", "railyard-image-")
	if err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	defer os.RemoveAll(tmp)
	files, err := GoBuild(ctx, BuildOptions{Dir: o.Dir, Packages: o.Packages, Arch: o.Arch, Version: o.Version, Revision: o.Revision, OutDir: tmp})
	if err != nil {
		return Result{}, err
	}
	layerTar, err := Layer(files, o.Created)
	if err != nil {
		return Result{}, err
	}
	meta := Meta{
		Arch: o.Arch, Version: o.Version, Revision: o.Revision, Source: o.Source, Created: o.Created,
		Cmd: []string{"/" + BinDir + "/railyard-agent"}, Debian: debian,
	}
	res := Result{Name: o.Name, Unpacked: int64(len(layerTar)), Sizes: map[string]int64{}}
	if debian != nil {
		res.Packages = debian.Packages
		res.DebianUnpacked = int64(len(debian.Tar))
		res.Unpacked += res.DebianUnpacked
	}
	img, err := Assemble(layerTar, meta)
	if err != nil {
		return Result{}, err
	}
	for _, f := range files {
		res.Sizes[path.Base(f.Path)] = int64(len(f.Data))
	}
	if res.Digest, err = img.Digest(); err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	for i, l := range layers {
		n, err := l.Size()
		if err != nil {
			return Result{}, fmt.Errorf("image: %w", err)
		}
		res.Layer += n
		if i == 1 {
			res.DebianLayer = n
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(o.Out), "."+filepath.Base(o.Out)+".tmp-")
	if err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if err := WriteArchive(f, img, o.Name, o.Created); err != nil {
		f.Close()
		return Result{}, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return Result{}, fmt.Errorf("image: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return Result{}, fmt.Errorf("image: %w", err)
	}
	res.Archive = st.Size()
	if err := f.Close(); err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	if err := os.Rename(f.Name(), o.Out); err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	return res, nil
}

// Run is hack/image's main: parse flags, Build, print a summary.
func Run(ctx context.Context, args []string, env func(string) (string, bool), out, errOut io.Writer) error {
	fs := pflag.NewFlagSet("image", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	var o Options
	var src SourceFlags
	AddSourceFlags(fs, &src, "release version (required): image tag, OCI version label, internal/version",
		"creation time, Unix seconds (default $SOURCE_DATE_EPOCH, else 0); make images passes the commit time")
	fs.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH of the image")
	fs.StringVar(&o.Name, "name", "", "image name (default ghcr.io/railyard-io/railyard:<version>, with --infiniband-diags <version>"+InfinibandDiagsTagSuffix+")")
	fs.StringVar(&o.Out, "out", "", "archive path (default _output/images/railyard-<tag>-<arch>.tar)")
	fs.StringSliceVar(&o.Packages, "packages", DefaultPackages(), "packages to build into /usr/local/bin")
	fs.BoolVar(&o.InfinibandDiags, "infiniband-diags", false, "add a layer with infiniband-diags' smpquery from pinned Debian packages (tag <version>"+InfinibandDiagsTagSuffix+"; docs/fabric.md)")
	created, ok, err := ParseSourceFlags(fs, &src, args, env, false)
	if err != nil || !ok {
		return err
	}
	o.Dir, o.Version, o.Revision, o.Source, o.Debian, o.Created = src.Dir, src.Version, src.Revision, src.Source, src.Debian, created
	tag := o.Version
	if o.InfinibandDiags {
		tag += InfinibandDiagsTagSuffix
	}
	if o.Name == "" {
		o.Name = "ghcr.io/railyard-io/railyard:" + tag
	}
	if o.Out == "" {
		o.Out = filepath.Join("_output", "images", "railyard-"+tag+"-"+o.Arch+".tar")
	}
	res, err := Build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n  name    %s\n  digest  %s\n  archive %s, layer %s gzip (%s unpacked)\n", o.Out, res.Name, res.Digest, mib(res.Archive), mib(res.Layer), mib(res.Unpacked))
	for _, p := range o.Packages {
		b := path.Base(p)
		fmt.Fprintf(out, "  /%s/%s %s\n", BinDir, b, mib(res.Sizes[b]))
	}
	if res.Packages != nil {
		fmt.Fprintf(out, "  Debian layer %s gzip (%s unpacked): %s\n", mib(res.DebianLayer), mib(res.DebianUnpacked), PackageList(res.Packages))
	}
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
