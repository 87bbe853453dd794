package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/railyard-io/railyard/internal/image"
)

// Run is hack/release's main (`make release VERSION=X.Y.Z`): parse flags,
// Release, print the artifacts.
func Run(ctx context.Context, args []string, env func(string) (string, bool), out, errOut io.Writer) error {
	fs := pflag.NewFlagSet("release", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	var o Options
	var created string
	fs.StringVar(&o.Version, "version", "", "release version X.Y.Z (required; no leading v)")
	fs.StringVar(&o.Revision, "revision", "", "source revision, the git commit (required)")
	fs.StringVar(&created, "created", "", "creation time, Unix seconds (default $SOURCE_DATE_EPOCH); make release passes the commit's time")
	fs.StringVar(&o.Out, "out", "", "release directory (default _output/release/<version>)")
	fs.StringVar(&o.Dir, "dir", ".", "module root to build from")
	fs.StringVar(&o.Chart, "chart", filepath.Join("deploy", "helm", "railyard"), "Helm chart directory")
	fs.StringSliceVar(&o.Arches, "arch", []string{"amd64", "arm64"}, "image architectures")
	fs.StringSliceVar(&o.InfinibandArches, "infiniband-arch", []string{"amd64", "arm64"}, "architectures that also get the infiniband-diags image (none: --infiniband-arch=)")
	fs.StringVar(&o.Repository, "repository", "ghcr.io/railyard-io/railyard", "image repository the archives name")
	fs.StringVar(&o.Source, "source", "https://github.com/railyard-io/railyard", "OCI source label")
	fs.StringVar(&o.Debian.Mirror, "debian-mirror", image.DefaultDebianMirror, "Debian archive of the infiniband-diags packages (checked against pinned SHA256 sums)")
	fs.StringVar(&o.Debian.CacheDir, "debian-cache", filepath.Join("_output", "debs"), "directory keeping the verified .deb files between builds")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.Version == "" || o.Revision == "" {
		return fmt.Errorf("--version and --revision are required")
	}
	if err := CheckVersion(o.Version); err != nil {
		return err
	}
	if created == "" {
		created, _ = env("SOURCE_DATE_EPOCH")
	}
	if created == "" {
		return fmt.Errorf("--created or SOURCE_DATE_EPOCH is required (the commit's time: git log -1 --format=%%ct)")
	}
	secs, err := strconv.ParseInt(created, 10, 64)
	if err != nil || secs < 0 {
		return fmt.Errorf("--created / SOURCE_DATE_EPOCH %q: want Unix seconds", created)
	}
	o.Created = time.Unix(secs, 0).UTC()
	if o.Out == "" {
		o.Out = filepath.Join("_output", "release", o.Version)
	}
	o.Progress = errOut
	start := time.Now()
	arts, err := Release(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: release %s (%s) in %s\n", o.Out, o.Version, o.Revision, time.Since(start).Round(time.Second))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  FILE\tKIND\tSIZE\tIMAGE DIGEST")
	for _, a := range arts {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.Name, a.Kind, size(a.Size), a.Digest)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "verify: cd %s && sha256sum -c %s\n", o.Out, SumsFile)
	return nil
}

func size(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
