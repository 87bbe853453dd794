package cli

import (
	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/bench"
	"github.com/railyard-io/railyard/internal/cli/doctor"
	"github.com/railyard-io/railyard/internal/cli/fabric"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/cli/machinescmd"
	"github.com/railyard-io/railyard/internal/cli/migrate"
	"github.com/railyard-io/railyard/internal/cli/node"
	"github.com/railyard-io/railyard/internal/cli/rails"
	"github.com/railyard-io/railyard/internal/cli/simulate"
	"github.com/railyard-io/railyard/internal/cli/top"
	"github.com/railyard-io/railyard/internal/cli/topo"
)

// commands returns every verb of the railyard command, in help order.
// Each verb package exports NewCommand(iostreams.Streams) *cobra.Command.
func commands(s iostreams.Streams) []*cobra.Command {
	return []*cobra.Command{
		topo.NewCommand(s),
		machinescmd.NewCommand(s),
		simulate.NewCommand(s),
		bench.NewCommand(s),
		migrate.NewCommand(s),
		doctor.NewCommand(s),
		top.NewCommand(s),
		fabric.NewCommand(s),
		rails.NewCommand(s),
		node.NewCommand(s),
	}
}
