package clitest

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// ExitIfChild is for a package's TestMain: when the environment variable
// env is "1", the test binary is a child a test started to run the verb
// elsewhere (another network namespace), so it runs the command built by
// newCommand with the process's arguments and exits, 1 if it failed
// (cobra has printed the error). Otherwise it returns and the tests run.
// The verb runs so without building the railyard binary.
func ExitIfChild(env string, newCommand func(iostreams.Streams) *cobra.Command) {
	if os.Getenv(env) != "1" {
		return
	}
	cmd := newCommand(iostreams.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.SetArgs(os.Args[1:])
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
