package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/version"
)

// NewRootCommand returns the railyard command with every verb attached.
func NewRootCommand(s iostreams.Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "railyard",
		Short: "RDMA networking for GPU clusters on Kubernetes",
		Long: `railyard shows how a node's GPUs pair with its RDMA NICs on the PCIe fabric,
simulates topology-aware allocation at cluster scale, and parses, judges and
plots RDMA benchmark results (perftest, nccl-tests, OSU).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.String(), // --version
	}
	root.SetVersionTemplate("railyard {{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.AddCommand(commands(s)...)
	root.AddCommand(&cobra.Command{
		Use:     "version",
		Short:   "Print the release version and the source revision the binary was built from",
		Example: "  railyard version\n  railyard --version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(s.Out, "railyard %s\n", version.String())
			return err
		},
	})
	return root
}

// Run executes the railyard command line args (without the program name).
// When ctx is done (NotifyContext: SIGINT or SIGTERM) it returns an error
// wrapping ErrInterrupted, as soon as the command has stopped or after
// Grace, whichever is first.
func Run(ctx context.Context, args []string, s iostreams.Streams) error {
	root := NewRootCommand(s)
	root.SetArgs(args)
	return runInterruptible(ctx, func() error { return root.ExecuteContext(ctx) })
}
