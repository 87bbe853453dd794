package topo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/nccltopo"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
	"github.com/railyard-io/railyard/machines"
)

// Source says where a topology comes from: a sysfs root or a built-in
// machine model. Other commands (simulate, bench report) reuse it.
type Source struct {
	Sysfs   string
	Machine string
	VFs     int
	// NCCLTopo is an NCCL topology file (NCCL_TOPO_FILE format) whose PCI
	// nesting gives the GPU x NIC classes; it replaces a model's own file.
	NCCLTopo string
}

// AddFlags registers --sysfs, --machine, --vfs and --nccl-topo on a command.
func (s *Source) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.Sysfs, "sysfs", "", "read the topology from this sysfs root instead of /sys")
	cmd.Flags().StringVar(&s.Machine, "machine", "", "use a built-in machine model (list them with: railyard machines)")
	cmd.Flags().IntVar(&s.VFs, "vfs", 0, "with --machine: SR-IOV VFs to create on every ConnectX PF")
	cmd.Flags().StringVar(&s.NCCLTopo, "nccl-topo", "", "classify GPU x NIC pairs from this NCCL topology file (NCCL_TOPO_FILE), as on cloud VMs that hide their PCIe switches")
}

// options returns the discovery options: the --nccl-topo file, else the
// model's own file, else none.
func (s *Source) options() (discovery.Options, error) {
	if s.NCCLTopo != "" {
		sys, err := nccltopo.ParseFile(s.NCCLTopo)
		if err != nil {
			return discovery.Options{}, fmt.Errorf("--nccl-topo: %w", err)
		}
		return discovery.Options{NCCLTopology: sys, NCCLTopologyName: filepath.Base(s.NCCLTopo)}, nil
	}
	if s.Machine != "" {
		return machines.DiscoveryOptions(s.Machine)
	}
	return discovery.Options{}, nil
}

// Load discovers the topology the flags name; the live /sys without flags.
func (s *Source) Load(ctx context.Context) (*topology.Topology, string, error) {
	if s.Sysfs != "" && s.Machine != "" {
		return nil, "", errors.New("--sysfs and --machine are mutually exclusive")
	}
	if s.VFs < 0 || s.VFs > fakesysfs.MaxVFsPerPF {
		return nil, "", fmt.Errorf("--vfs %d: want 0 to %d", s.VFs, fakesysfs.MaxVFsPerPF)
	}
	if s.Machine != "" {
		m, err := machines.Lookup(s.Machine)
		if err != nil {
			return nil, "", err
		}
		opts, err := s.options()
		if err != nil {
			return nil, "", err
		}
		t, err := machines.TopologyWith(ctx, m.Name, s.VFs, opts)
		if err != nil {
			return nil, "", err
		}
		return t, fmt.Sprintf("machine model %s (%s)", m.Name, m.Summary) + withFile(opts), nil
	}
	if s.VFs != 0 {
		return nil, "", errors.New("--vfs only applies to --machine models")
	}
	root := s.Sysfs
	if root == "" {
		root = "/sys"
	}
	opts, err := s.options()
	if err != nil {
		return nil, "", err
	}
	t, err := opts.Discover(ctx, root)
	if err != nil {
		return nil, "", err
	}
	return t, "sysfs " + root + withFile(opts), nil
}

func withFile(o discovery.Options) string {
	if o.NCCLTopology == nil {
		return ""
	}
	return " with NCCL topology file " + o.NCCLTopologyName
}

// NewCommand returns the `railyard topo` command.
func NewCommand(s iostreams.Streams) *cobra.Command {
	var src Source
	var asJSON bool
	var bindings, cniState string
	var wait time.Duration
	var captureFile, hostRoot string
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "Show how the node's GPUs pair with its RDMA NICs on the PCIe fabric",
		Long: `topo reads the PCIe fabric from sysfs and prints, like nvidia-smi topo -m,
the distance class of every GPU x RDMA NIC pair:

  PIX   the path crosses at most one PCIe switch
  PXB   several PCIe bridges, but not the host bridge
  PHB   the path crosses a PCIe host bridge (the CPU)
  NODE  between host bridges of one NUMA node
  SYS   across the SMP interconnect between NUMA nodes

NCCL uses GPUDirect RDMA by default only up to PXB. topo also prints each
NIC's ports and VFs, the rails (the best NIC for every GPU, no NIC serving
more than its share) and warnings such as ports that are down.

Without flags it reads the live /sys. Use --machine to try a built-in model.

On cloud VMs that hide the PCIe tree (Azure ND-series: every GPU and NIC on
its own PCI domain, so sysfs says NODE for every pair of a NUMA node), give the
NCCL topology file the cloud ships for the VM size with --nccl-topo: its PCI
nesting gives PIX/PXB/PHB and its <cpu numaid> NODE or SYS, as NCCL reads it.
Models that have such a file (azure-ndv5) use theirs.

--neighbors WAIT listens for LLDP on every RoCE NIC port for WAIT and
shows the switch and port each is cabled to, or why there is none (no
frame: the switch sends none or the NIC's firmware consumes it; a port
down; InfiniBand, whose neighbor comes from the subnet). Switches send LLDP
every 30 s by default. It needs CAP_NET_RAW in the host's network namespace.

--cni-state DIR prints what railyard-cni attached on this node (its state
directory): per pod sandbox (crictl pods shows their IDs) each interface's
device, RDMA device, the RoCE v2 GID index of its address (NCCL 2.21 and
later pick it themselves from NCCL_IB_ROCE_VERSION_NUM and
NCCL_IB_ADDR_FAMILY, which Railyard sets) and its multi-rail routing table,
and whether the sandbox's HCAs share one GID index, or the fix where not
(one NCCL_IB_GID_INDEX would be wrong for some).

--capture FILE writes what discovery and doctor read from this node (the
sysfs files, directories and symlinks, and the /proc, /etc and /lib files
doctor reads; never an environment or a command line) as a .tar.gz whose
sys/ and host/ replay with --sysfs and doctor's --host-root: attach it to a
bug report, or make a real machine a test fixture.`,
		Example: `  railyard topo --machine dgx-h100
  railyard topo --machine dgx-a100 --vfs 8 --json
  railyard topo --sysfs /tmp/fake-sys
  railyard topo --nccl-topo /opt/microsoft/ndv4-topo.xml
  railyard topo --neighbors 35s      # which switch port each NIC is cabled to (LLDP)
  railyard topo --cni-state /var/lib/cni/railyard  # each pod's rail interfaces and RoCE GID indexes
  railyard topo --capture node.tar.gz  # what discovery and doctor read, for a bug report`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if captureFile != "" {
				return writeCapture(cmd.Context(), s, src, hostRoot, captureFile)
			}
			if bindings != "" {
				if err := storeDir(bindings); err != nil {
					return fmt.Errorf("--bindings: %w", err)
				}
			}
			t, from, err := src.Load(cmd.Context())
			if err != nil {
				return err
			}
			var ports []fabric.Port
			if wait != 0 {
				if ports, err = listenNeighbors(cmd.Context(), t, wait); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(s.Out, t, ports)
			}
			render(s.Out, t, from)
			if wait != 0 {
				writeNeighbors(s.Out, ports, wait)
			}
			if bindings != "" {
				if err := binding.NewStore(bindings, binding.Options{}).WriteTable(s.Out); err != nil {
					return err
				}
			}
			if cniState != "" {
				if err := writeAttachments(s.Out, cniState); err != nil {
					return err
				}
			}
			if src.Sysfs == "" && src.Machine == "" && (len(t.GPUs) == 0 || len(t.NICs) == 0) {
				fmt.Fprintf(s.ErrOut, "\nThis node has %d GPUs and %d RDMA NICs. To see what Railyard does on a GPU server, try a built-in model:\n  railyard topo --machine dgx-h100\n(`railyard machines` lists them.)\n", len(t.GPUs), len(t.NICs))
			}
			return nil
		},
	}
	src.AddFlags(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: gpus, nics, links, rails, warnings")
	cmd.Flags().DurationVar(&wait, "neighbors", 0, "listen for LLDP on every RoCE NIC port for this long and show each port's switch (e.g. 35s)")
	cmd.Flags().StringVar(&bindings, "bindings", "", "also print the late bindings (token -> device) of this binding store: railyard-agent's <stateDir>/binding, /var/lib/railyard/binding")
	cmd.Flags().StringVar(&cniState, "cni-state", "", "also print railyard-cni's attachments of this state directory (its stateDir, /var/lib/cni/railyard): each pod sandbox's interfaces "+
		"with their RDMA device, RoCE v2 GID index and multi-rail table, and whether a sandbox's HCAs agree on one GID index (else the fix)")
	cmd.Flags().StringVar(&captureFile, "capture", "", "write what discovery and doctor read from this node (sysfs, the /proc, /etc and /lib files doctor reads; no environment, no command lines) to this new file, a .tar.gz that --sysfs and doctor's --host-root replay")
	cmd.Flags().StringVar(&hostRoot, "host-root", "/", "with --capture: where the host's / is (for /proc, /etc, /lib)")
	return cmd
}

// storeDir checks that a binding store directory exists: the store reads
// a missing bindings file as "no bindings", which for a mistyped or
// missing directory would print "0" instead of an error.
func storeDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("binding store: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("binding store %s: not a directory (%s)", dir, inputfile.TypeName(st.Mode()))
	}
	return nil
}

// jsonView is the --json contract: these field names are relied on by tools.
type jsonView struct {
	GPUs     []jsonGPU  `json:"gpus"`
	NICs     []jsonNIC  `json:"nics"`
	Links    []jsonLink `json:"links"`
	Rails    []jsonLink `json:"rails"`
	Warnings []string   `json:"warnings"`
	// Neighbors is only there with --neighbors: each NIC port's rail and
	// the LLDP neighbor heard on it, or why none.
	Neighbors []fabric.Port `json:"neighbors,omitempty"`
}

// Fields added after the first release are all omitempty, so older
// consumers see the same document: links[].source ("nccl-topo" when the
// class comes from an NCCL topology file), nics[].netdev_pci (the function
// owning a paired netdev, PVRDMA) and nics[].healthy.

type jsonGPU struct {
	PCI    string `json:"pci"`
	NUMA   int    `json:"numa"`
	Vendor string `json:"vendor"`
	Device string `json:"device"`
}

type jsonNIC struct {
	PCI       string          `json:"pci"`
	Netdev    string          `json:"netdev"`
	RDMA      string          `json:"rdma"`
	LinkLayer string          `json:"link_layer"`
	NUMA      int             `json:"numa"`
	VFs       int             `json:"vfs"`
	TotalVFs  int             `json:"total_vfs"`
	Vendor    string          `json:"vendor"`
	Device    string          `json:"device"`
	Uverbs    string          `json:"uverbs"`
	Ports     []topology.Port `json:"ports"`
	VFList    []topology.VF   `json:"vf_list,omitempty"`
	NetdevPCI string          `json:"netdev_pci,omitempty"`
	// Healthy is false when a port is not ACTIVE; omitted when true.
	Healthy *bool `json:"healthy,omitempty"`
}

type jsonLink struct {
	GPU    string `json:"gpu"`
	NIC    string `json:"nic"`
	Class  string `json:"class"`
	Source string `json:"source,omitempty"`
}

func writeJSON(w io.Writer, t *topology.Topology, neighbors []fabric.Port) error {
	v := jsonView{GPUs: []jsonGPU{}, NICs: []jsonNIC{}, Links: []jsonLink{}, Rails: []jsonLink{}, Warnings: []string{}, Neighbors: neighbors}
	for _, g := range t.GPUs {
		v.GPUs = append(v.GPUs, jsonGPU{PCI: g.PCI, NUMA: g.NUMA, Vendor: fmt.Sprintf("0x%04x", g.Vendor), Device: fmt.Sprintf("0x%04x", g.Device)})
	}
	for _, n := range t.NICs {
		jn := jsonNIC{PCI: n.PCI, Netdev: n.Netdev, RDMA: n.RDMA, LinkLayer: n.LinkLayer, NUMA: n.NUMA,
			VFs: len(n.VFs), TotalVFs: n.TotalVFs, Vendor: fmt.Sprintf("0x%04x", n.Vendor), Device: fmt.Sprintf("0x%04x", n.Device),
			Uverbs: n.Uverbs, Ports: n.Ports, VFList: n.VFs, NetdevPCI: n.NetdevPCI}
		if !n.Healthy() {
			jn.Healthy = new(bool)
		}
		v.NICs = append(v.NICs, jn)
	}
	for _, l := range t.Links {
		v.Links = append(v.Links, jsonLink{GPU: l.GPU, NIC: l.NIC, Class: l.Class.String(), Source: l.Source})
	}
	for _, l := range t.Rails {
		v.Rails = append(v.Rails, jsonLink{GPU: l.GPU, NIC: l.NIC, Class: l.Class.String(), Source: l.Source})
	}
	for _, w := range t.Warnings {
		v.Warnings = append(v.Warnings, sysfs.Clip(w.String(), maxWarning))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
