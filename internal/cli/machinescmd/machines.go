package machinescmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

// NewCommand returns the `railyard machines` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	var writeDir string
	var vfs int
	cmd := &cobra.Command{
		Use:   "machines [NAME --write-sysfs DIR]",
		Short: "List the built-in machine models, or write one's fake sysfs tree",
		Long: `machines lists the built-in machine models: real GPU servers described from
public sources, usable with --machine by topo and simulate. With a NAME and
--write-sysfs DIR it writes that model's fake sysfs tree (the real /sys layout)
to DIR, for railyard-agent --sysfs or experiments.`,
		Example: `  railyard machines
  railyard machines dgx-h100 --write-sysfs /tmp/h100-sys --vfs 8`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if writeDir == "" {
					return fmt.Errorf("with a machine name, --write-sysfs DIR is required")
				}
				if vfs < 0 || vfs > fakesysfs.MaxVFsPerPF {
					return fmt.Errorf("--vfs %d: want 0 to %d VFs per PF", vfs, fakesysfs.MaxVFsPerPF)
				}
				m, err := machines.Lookup(args[0])
				if err != nil {
					return err
				}
				d, err := machines.Description(m.Name)
				if err != nil {
					return err
				}
				// Stops on Ctrl-C and removes a partly written tree.
				if err := fakesysfs.GenerateContext(cmd.Context(), writeDir, d, fakesysfs.Options{VFsPerPF: vfs}); err != nil {
					return fmt.Errorf("--write-sysfs %s: %w", writeDir, err)
				}
				fmt.Fprintf(s.Out, "wrote the sysfs tree of %s to %s\n", m.Name, writeDir)
				return nil
			}
			if writeDir != "" {
				return fmt.Errorf("--write-sysfs needs a machine name")
			}
			tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION")
			for _, m := range machines.List() {
				fmt.Fprintf(tw, "%s\t%s\n", m.Name, m.Summary)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&writeDir, "write-sysfs", "", "write the model's fake sysfs tree to this (empty) directory")
	cmd.Flags().IntVar(&vfs, "vfs", 0, fmt.Sprintf("SR-IOV VFs to create on every ConnectX PF (0 to %d)", fakesysfs.MaxVFsPerPF))
	return cmd
}
