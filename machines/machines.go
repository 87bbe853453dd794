package machines

import (
	"context"
	"embed"
	"fmt"
	"sort"
	"strings"

	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/machine"
	"github.com/railyard-io/railyard/internal/nccltopo"
	"github.com/railyard-io/railyard/internal/topology"
)

//go:embed *.json *.xml
var files embed.FS

// Model is one built-in machine model.
type Model struct {
	Name    string // CLI name, "dgx-h100"
	File    string // description file, "dgx_h100.json"
	Summary string
	// NCCLTopo is the NCCL topology file the model's vendor ships for it
	// ("azure_ndv5.nccl-topo.xml"), "" for none. Discovery of the model
	// classifies GPU x NIC pairs from it, as NCCL_TOPO_FILE makes NCCL do.
	NCCLTopo string
}

// models lists the built-in models in display order. dgx2_partial.json is
// embedded too but is no model: it has published matrix rows and no tree.
func models() []Model {
	return []Model{
		{"dgx-1", "dgx1_v100.json", "NVIDIA DGX-1: 8x V100, 4x EDR InfiniBand behind 4 PLX switches, 2 sockets", ""},
		{"roce-8gpu-4nic", "pfn_mn2a.json", "8-GPU/4-NIC RoCE node (DGX-1-like, 100GbE RoCEv2; layout inferred)", ""},
		{"dgx-a100", "dgx_a100.json", "NVIDIA DGX A100: 8x A100, 8 compute HDR HCAs + storage, AMD NPS4", ""},
		{"dgx-h100", "dgx_h100.json", "NVIDIA DGX H100: 8x H100, 8x CX-7 NDR 400G + storage ports + E810", ""},
		{"aws-p4d", "aws_p4d_24xlarge.json", "AWS p4d.24xlarge VM: 8x A100, 4x EFA, no visible switches", ""},
		{"aws-p5", "aws_p5_48xlarge.json", "AWS p5.48xlarge VM: 8x H100, 32x EFA, 1 GPU + 4 EFA per switch", ""},
		{"azure-ndv4", "azure_ndv4.json", "Azure NDv4 VM: 8x A100, 8x HDR, every device on its own PCI domain (sysfs view)", ""},
		{"azure-ndv5", "azure_ndv5.json", "Azure NDv5 VM: 8x H100, 8x NDR, flat in sysfs; classes from Azure's NCCL topology file", "azure_ndv5.nccl-topo.xml"},
		{"vsphere-pvrdma", "vsphere_vgpu_pvrdma.json", "vSphere VM: 1 vGPU (T4) + PVRDMA (vmw_pvrdma, RoCE) paired with a vmxnet3 netdev", ""},
	}
}

// List returns the built-in models.
func List() []Model { return models() }

// Names returns the built-in model names.
func Names() []string {
	var out []string
	for _, m := range models() {
		out = append(out, m.Name)
	}
	return out
}

// Lookup finds a model by its name or by its description's file id
// ("dgx_h100"), case-insensitively.
func Lookup(name string) (Model, error) {
	want := strings.ToLower(strings.TrimSpace(name))
	for _, m := range models() {
		if m.Name == want || strings.TrimSuffix(m.File, ".json") == strings.ReplaceAll(want, "-", "_") {
			return m, nil
		}
	}
	names := Names()
	sort.Strings(names)
	return Model{}, fmt.Errorf("unknown machine %q (built-in machines: %s)", name, strings.Join(names, ", "))
}

// Description parses a model's machine description.
func Description(name string) (*machine.Description, error) {
	m, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return RawDescription(m.File)
}

// RawDescription parses an embedded description file by file name.
func RawDescription(file string) (*machine.Description, error) {
	data, err := files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("machine description %s: %w", file, err)
	}
	d, err := machine.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return d, nil
}

// Files returns the embedded file names: descriptions and NCCL topology
// files.
func Files() []string {
	entries, _ := files.ReadDir(".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// NCCLTopology parses the NCCL topology file of a model; nil without error
// for a model that has none.
func NCCLTopology(name string) (*nccltopo.System, error) {
	m, err := Lookup(name)
	if err != nil || m.NCCLTopo == "" {
		return nil, err
	}
	f, err := files.Open(m.NCCLTopo)
	if err != nil {
		return nil, fmt.Errorf("machine %s: %w", m.Name, err)
	}
	defer f.Close()
	s, err := nccltopo.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("machine %s: %s: %w", m.Name, m.NCCLTopo, err)
	}
	return s, nil
}

// DiscoveryOptions returns the discovery options that reproduce a model:
// its NCCL topology file when it has one.
func DiscoveryOptions(name string) (discovery.Options, error) {
	m, err := Lookup(name)
	if err != nil {
		return discovery.Options{}, err
	}
	s, err := NCCLTopology(m.Name)
	if err != nil {
		return discovery.Options{}, err
	}
	return discovery.Options{NCCLTopology: s, NCCLTopologyName: m.NCCLTopo}, nil
}

// WriteSysfs generates a model's fake sysfs tree in dir (empty or absent)
// with vfsPerPF VFs on every SR-IOV capable NIC.
func WriteSysfs(name, dir string, vfsPerPF int) error {
	d, err := Description(name)
	if err != nil {
		return err
	}
	return fakesysfs.Generate(dir, d, fakesysfs.Options{VFsPerPF: vfsPerPF})
}

// Topology discovers a model through a generated sysfs tree in a temporary
// directory, removed before it returns, with the model's discovery options
// (its NCCL topology file).
func Topology(ctx context.Context, name string, vfsPerPF int) (*topology.Topology, error) {
	opts, err := DiscoveryOptions(name)
	if err != nil {
		return nil, err
	}
	return TopologyWith(ctx, name, vfsPerPF, opts)
}

// TopologyWith is Topology with explicit discovery options: the zero
// Options show what sysfs alone gives, or a caller's own NCCL topology file.
func TopologyWith(ctx context.Context, name string, vfsPerPF int, opts discovery.Options) (*topology.Topology, error) {
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		return nil, err
	}
	defer fakesysfs.Cleanup(dir)
	if err := WriteSysfs(name, dir, vfsPerPF); err != nil {
		return nil, err
	}
	t, err := opts.Discover(ctx, dir)
	if err != nil {
		return nil, err
	}
	return t, nil
}
