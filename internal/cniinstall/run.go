package cniinstall

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/railyard-io/railyard/internal/version"
)

// Run is railyard-cni-install's main.
func Run(_ context.Context, args []string, out, errOut io.Writer) error {
	fs := pflag.NewFlagSet("railyard-cni-install", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	o := Options{}
	fs.StringVar(&o.Source, "source", "/usr/local/bin/railyard-cni", "the binary to install")
	fs.StringVar(&o.DestDir, "cni-bin-dir", "/host/opt/cni/bin", "the node's CNI bin directory, as mounted")
	fs.StringVar(&o.Name, "name", "railyard-cni", "file name in the CNI bin directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	res, err := Install(o)
	for _, p := range res.RemovedTemps {
		fmt.Fprintf(out, "removed %s (left by an earlier run)\n", p)
	}
	if err != nil {
		return err
	}
	what := "installed"
	if !res.Changed {
		what = "unchanged"
	}
	fmt.Fprintf(out, "%s %s sha256:%s %d bytes (railyard-cni-install %s)\n", what, res.Path, res.SHA256, res.Size, version.String())
	return nil
}
