package migrate

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/migrate"
)

// Exit codes of migrate sriovdp.
const (
	ExitDropped = 1 // converted, but something could not be mapped
	ExitInvalid = 2 // the input is not a configuration the plugin accepts
)

// NewCommand returns the `railyard migrate` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Convert other projects' configurations into Railyard's",
		Long: `migrate converts the configuration of the projects Railyard replaces:

  sriovdp   the SR-IOV network device plugin's config.json -> railyard-agent's AgentConfig`,
	}
	cmd.AddCommand(newSRIOVDPCommand(s))
	return cmd
}

func newSRIOVDPCommand(s iostreams.Streams) *cobra.Command {
	var in, out string
	var opts migrate.Options
	cmd := &cobra.Command{
		Use:   "sriovdp [--in FILE|-] [--out FILE|-]",
		Short: "Convert the SR-IOV network device plugin's config.json to a railyard-agent configuration",
		Long: `sriovdp reads the SR-IOV network device plugin's config.json (or the ConfigMap
holding it) exactly as that plugin decodes it, writes a railyard-agent
configuration (api railyard.io/v1alpha1, kind AgentConfig) with one pool per
resource, and prints to stderr, per resource and field, what was changed,
dropped or assumed, and why:

  pool name      resourcePrefix/resourceName; without a prefix, --resource-prefix
                 (the plugin's default, intel.com)
  isRdma: true   rdmaCapable: true, plus the umad and issm device nodes the
                 plugin also mounted
  linkTypes      ether -> Ethernet, infiniband -> InfiniBand
  rootDevices    pciAddresses (a VF matches by its PF's address)
  deviceKind     vf or pf: pfNames and rootDevices select only VFs in the
                 plugin, known device IDs and drivers tell VF from PF;
                 otherwise vf is assumed and noted (--device-kind forces one)
  dropped        ddpProfiles, pKeys, acpiIndexes, needVhostNet, additionalInfo,
                 excludeTopology, VF ranges of rootDevices
  skipped        accelerator and auxNetDevice resources, vdpaType, devices
                 bound to vfio-pci/igb_uio/uio_pci_generic

The input may be a config.json, a ConfigMap (its config.json, or each of its
keys when it has none, as the SR-IOV network operator keeps one per node), a
v1 List of ConfigMaps or several YAML documents; when it holds more than one
configuration, --key chooses one (a data key, or CONFIGMAP/KEY). At most 1 MiB
and 1024 resources are read.

Exit status: 0 when everything mapped (notes may remain), 1 when something was
dropped or skipped (the configuration is still written, unless no resource
could be converted), 2 when the input is not a configuration the plugin would
accept (nothing is written).`,
		Example: `  kubectl -n kube-system get configmap sriovdp-config -o yaml \
    | railyard migrate sriovdp --out railyard-agent.yaml
  railyard migrate sriovdp --in config.json --resource-prefix example.com`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return runSRIOVDP(s, in, out, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&in, "in", "-", "the plugin's config.json or its ConfigMap (- for stdin)")
	fl.StringVar(&out, "out", "-", "where to write the agent configuration (- for stdout)")
	fl.StringVar(&opts.ResourcePrefix, "resource-prefix", migrate.DefaultResourcePrefix,
		"prefix of resources without their own, as the plugin's --resource-prefix flag was set")
	fl.StringVar(&opts.DeviceKind, "device-kind", "", "force every pool's deviceKind (vf or pf) instead of inferring it")
	fl.StringVar(&opts.Key, "key", "", "the configuration to convert when the input holds several (a ConfigMap's per-node keys, a List, several documents): a data key, or CONFIGMAP/KEY")
	return cmd
}

func runSRIOVDP(s iostreams.Streams, in, out string, opts migrate.Options) error {
	data, err := readInput(s.In, in)
	if err != nil {
		return &iostreams.ExitError{Code: ExitInvalid, Err: err}
	}
	cfg, report, err := migrate.ConvertSRIOVDP(data, opts)
	if report != nil {
		if werr := report.Write(s.ErrOut); werr != nil {
			return werr
		}
	}
	switch {
	case errors.Is(err, migrate.ErrNoPools):
		return &iostreams.ExitError{Code: ExitDropped, Err: fmt.Errorf("%w: no configuration written", err)}
	case err != nil:
		return &iostreams.ExitError{Code: ExitInvalid, Err: err}
	}
	y, err := render(cfg, report)
	if err != nil {
		return err
	}
	if err := writeOutput(s.Out, out, y); err != nil {
		return err
	}
	if report.Lossy() {
		return &iostreams.ExitError{Code: ExitDropped, Err: fmt.Errorf("%d field(s) dropped and %d resource(s) skipped: the configuration does less than the plugin did (see above)",
			report.Count(migrate.Dropped), report.Count(migrate.Skipped))}
	}
	return nil
}

// render is the YAML with a header naming its origin and the report's
// totals.
func render(cfg *v1alpha1.AgentConfig, r *migrate.Report) ([]byte, error) {
	y, err := migrate.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# railyard-agent configuration converted from the SR-IOV network device plugin's\n"+
		"# config.json by `railyard migrate sriovdp`: %d resource(s) -> %d pool(s), %d dropped,\n"+
		"# %d skipped, %d note(s). Read its report before deploying (docs/compat.md).\n",
		r.Resources, r.Pools, r.Count(migrate.Dropped), r.Count(migrate.Skipped), r.Count(migrate.Note))
	return append([]byte(head), y...), nil
}

// readInput reads the input through internal/inputfile: at most
// migrate.MaxInput bytes, and a file must be a regular one (a FIFO or a
// device fails at once).
func readInput(stdin io.Reader, name string) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = inputfile.ReadLimited(stdin, migrate.MaxInput)
	} else {
		data, err = inputfile.Read(name, migrate.MaxInput)
	}
	switch {
	case errors.Is(err, inputfile.ErrTooLarge):
		return nil, fmt.Errorf("%w: larger than %d KiB (real configurations are a few KiB): %w", migrate.ErrInvalid, migrate.MaxInput>>10, err)
	case err != nil:
		return nil, fmt.Errorf("reading the plugin's configuration: %w", err)
	}
	return data, nil
}

func writeOutput(stdout io.Writer, name string, data []byte) error {
	if name == "-" {
		_, err := stdout.Write(data)
		return err
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		return fmt.Errorf("writing the agent configuration: %w", err)
	}
	return nil
}
