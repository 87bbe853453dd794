package release

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
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
	var src image.SourceFlags
	image.AddSourceFlags(fs, &src, "release version X.Y.Z (required; no leading v)",
		"creation time, Unix seconds (default $SOURCE_DATE_EPOCH); make release passes the commit's time")
	fs.StringVar(&o.Out, "out", "", "release directory (default _output/release/<version>)")
	fs.StringVar(&o.Chart, "chart", filepath.Join("deploy", "helm", "railyard"), "Helm chart directory")
	fs.StringSliceVar(&o.Arches, "arch", []string{"amd64", "arm64"}, "image architectures")
	fs.StringSliceVar(&o.InfinibandArches, "infiniband-arch", []string{"amd64", "arm64"}, "architectures that also get the infiniband-diags image (none: --infiniband-arch=)")
	fs.StringVar(&o.Repository, "repository", "ghcr.io/railyard-io/railyard", "image repository the archives name")
	created, ok, err := image.ParseSourceFlags(fs, &src, args, env, true)
	if err != nil || !ok {
		return err
	}
	if err := CheckVersion(src.Version); err != nil {
		return err
	}
	o.Dir, o.Version, o.Revision, o.Source, o.Debian, o.Created = src.Dir, src.Version, src.Revision, src.Source, src.Debian, created
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
