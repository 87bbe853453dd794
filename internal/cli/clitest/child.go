package clitest

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

// childEnv, set to "1" in a process's environment, makes a test binary
// whose TestMain calls ExitIfChild run the verb instead of its tests.
const childEnv = "RAILYARD_CLITEST_CHILD"

// ChildEnviron is the environment for a child of the test binary
// (os.Args[0]) that is to run the verb: this process's, plus the marker
// ExitIfChild looks for.
func ChildEnviron() []string {
	return append(os.Environ(), childEnv+"=1")
}

// ExitIfChild is for a package's TestMain: in a child started with
// ChildEnviron (a test running the verb elsewhere, in another network
// namespace), it runs the command built by newCommand with the process's
// arguments and exits, 1 if it failed (cobra has printed the error).
// Otherwise it returns and the tests run. The verb runs so without
// building the railyard binary.
func ExitIfChild(newCommand func(iostreams.Streams) *cobra.Command) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	cmd := newCommand(iostreams.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.SetArgs(os.Args[1:])
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
