package helmchart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// Run is hack/manifests' main: render the static manifests into deploy/
// (`make manifests`), or with --check only report drift.
func Run(_ context.Context, args []string, out, errOut io.Writer) error {
	fs := pflag.NewFlagSet("manifests", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	chartDir := fs.String("chart", "deploy/helm/railyard", "chart directory")
	deployDir := fs.String("out", "deploy", "directory of the static manifests")
	check := fs.Bool("check", false, "only check that the files are up to date")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if msgs := Lint(*chartDir, StaticNamespace, nil); hasProblems(msgs) {
		for _, m := range msgs {
			fmt.Fprintln(errOut, m)
		}
		return fmt.Errorf("helm lint %s failed", *chartDir)
	}
	written, err := Write(*chartDir, *deployDir, *check)
	if err != nil {
		return err
	}
	for _, p := range written {
		fmt.Fprintln(out, "wrote", p)
	}
	if len(written) == 0 {
		fmt.Fprintln(out, "deploy/ manifests are up to date")
	}
	return nil
}

// hasProblems reports a WARNING or ERROR.
func hasProblems(msgs []LintMessage) bool {
	for _, m := range msgs {
		if m.Severity != "INFO" {
			return true
		}
	}
	return false
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
