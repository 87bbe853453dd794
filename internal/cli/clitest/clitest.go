package clitest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// Run builds the command with newCommand, feeds it stdin and args, and
// returns what it wrote to standard output and standard error.
func Run(t testing.TB, newCommand func(iostreams.Streams) *cobra.Command, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newCommand(iostreams.Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}
