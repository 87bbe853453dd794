package machines

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/machine"
	"github.com/railyard-io/railyard/internal/topology"
)

// expectation says what discovery must find on one built-in machine,
// derived from its description and not from the code under test.
type expectation struct {
	// classOf gives the expected class of a GPU x NIC pair (by label and
	// RDMA name) where the description publishes none, or overrides a
	// published one with the reason in the comment at the override.
	classOf func(d *machine.Description, gpu, nic *machine.Node) string
	// overrides are pairs "GPUn/mlx5_m" where the tree deliberately wins
	// over the published matrix; value is the class the tree gives.
	overrides map[string]string
	// bestFrom names another description whose gpu_nic_best applies.
	bestFrom string
	// gpus is the machine's GPU count when it is not 8.
	gpus int
}

// numaRule is the expected class for machines whose description has no
// matrix for a pair: same host bridge and switch decided by the tree.
func sameNUMA(gpuClassIfSame, other string) func(d *machine.Description, gpu, nic *machine.Node) string {
	return func(_ *machine.Description, g, n *machine.Node) string {
		if g.NUMA == n.NUMA {
			return gpuClassIfSame
		}
		return other
	}
}

var expectations = map[string]expectation{
	"dgx-1":    {},
	"dgx-a100": {},
	"dgx-h100": {},
	"aws-p4d":  {},
	// pfn_mn2a.json: "assumed identical class pattern to DGX-1" and it
	// reuses the DGX-1 tree, so the DGX-1 matrix applies verbatim.
	"roce-8gpu-4nic": {classOf: func(_ *machine.Description, g, n *machine.Node) string {
		return dgx1Matrix(g.Label, n.RDMA)
	}, bestFrom: "dgx1_v100.json"},
	// p5: 1 GPU + 4 EFA per switch -> PIX to its own four; the topo file
	// puts all eight switches under one CPU (one host bridge) -> PHB.
	"aws-p5": {classOf: func(d *machine.Description, g, n *machine.Node) string {
		for _, nic := range d.BestNIC[g.Label] {
			if nic == n.RDMA {
				return "PIX"
			}
		}
		return "PHB"
	}},
	// Azure NDv4: sysfs puts every GPU and HCA on its own PCI domain
	// (sysfs_reality), so sysfs discovery can only say NODE within a NUMA
	// node and SYS across; the PIX that NCCL reports comes from Azure's
	// NCCL_TOPO_FILE, which regroups them under virtual bridges. The tree
	// in the description is that topo file, so sysfs reality wins here.
	"azure-ndv4": {classOf: sameNUMA("NODE", "SYS")},
	// Azure NDv5 with its NCCL topology file (ndv5-topo.xml): each GPU and
	// its HCA under one virtual bridge -> PIX; other pairs of the same
	// <cpu> meet at the CPU -> PHB (NCCL's class; it has no NODE); across
	// the two <cpu> elements -> SYS. TestNCCLTopologyChangesTheCloudVMView
	// checks what sysfs alone says.
	"azure-ndv5": {classOf: func(d *machine.Description, g, n *machine.Node) string {
		switch {
		case slices.ContainsFunc(d.BestNIC[g.Label], func(b string) bool { return strings.HasPrefix(n.Address, b+":") }):
			return "PIX"
		case g.NUMA == n.NUMA:
			return "PHB"
		}
		return "SYS"
	}},
	// vSphere VM: the vGPU and the PVRDMA function sit on different root
	// ports of the one host bridge -> PHB.
	"vsphere-pvrdma": {classOf: func(*machine.Description, *machine.Node, *machine.Node) string { return "PHB" }, gpus: 1},
}

// dgx1Matrix returns the published DGX-1 matrix entry (dgx1_v100.json).
func dgx1Matrix(gpu, nic string) string {
	d, err := RawDescription("dgx1_v100.json")
	if err != nil {
		return ""
	}
	return d.Matrix[gpu][nic]
}

func nodesOf(d *machine.Description, kind machine.Kind) []*machine.Node {
	var out []*machine.Node
	d.Walk(func(n, _ *machine.Node) {
		if n.Kind == kind {
			out = append(out, n)
		}
	})
	return out
}

func discover(t *testing.T, name string, vfs int) (*machine.Description, *topology.Topology) {
	t.Helper()
	d, err := Description(name)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := fakesysfs.MkdirTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fakesysfs.Cleanup(dir) })
	if err := WriteSysfs(name, dir, vfs); err != nil {
		t.Fatal(err)
	}
	opts, err := DiscoveryOptions(name)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := opts.Discover(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return d, topo
}

func TestBuiltinMachinesFromGeneratedSysfs(t *testing.T) {
	for _, m := range List() {
		t.Run(m.Name, func(t *testing.T) {
			exp, ok := expectations[m.Name]
			if !ok {
				t.Fatalf("no expectation for built-in machine %s", m.Name)
			}
			d, topo := discover(t, m.Name, 0)
			if len(topo.Warnings) > 0 {
				t.Errorf("unexpected warnings: %v", topo.Warnings)
			}

			// GPU and NIC sets equal the tree's.
			var wantGPUs, wantNICs, gotGPUs, gotNICs []string
			gpuByAddr := map[string]*machine.Node{}
			nicByAddr := map[string]*machine.Node{}
			for _, g := range nodesOf(d, machine.KindGPU) {
				wantGPUs = append(wantGPUs, g.Address)
				gpuByAddr[g.Address] = g
			}
			for _, n := range nodesOf(d, machine.KindNIC) {
				if n.RDMA != "" {
					wantNICs = append(wantNICs, n.Address)
					nicByAddr[n.Address] = n
				}
			}
			for _, g := range topo.GPUs {
				gotGPUs = append(gotGPUs, g.PCI)
			}
			for _, n := range topo.NICs {
				gotNICs = append(gotNICs, n.PCI)
				if want := nicByAddr[n.PCI]; want != nil && n.RDMA != want.RDMA {
					t.Errorf("NIC %s: RDMA device %q, want %q", n.PCI, n.RDMA, want.RDMA)
				}
			}
			sort.Strings(wantGPUs)
			sort.Strings(wantNICs)
			if !slices.Equal(gotGPUs, wantGPUs) {
				t.Errorf("GPUs = %v, want %v", gotGPUs, wantGPUs)
			}
			if !slices.Equal(gotNICs, wantNICs) {
				t.Errorf("NICs = %v, want %v", gotNICs, wantNICs)
			}
			wantCount := 8
			if exp.gpus != 0 {
				wantCount = exp.gpus
			}
			if len(gotGPUs) != wantCount {
				t.Errorf("%d GPUs, want %d", len(gotGPUs), wantCount)
			}

			// Every pair's class: from the published matrix when the
			// description has one, else from the expectation's rule.
			checked := 0
			for _, l := range topo.Links {
				g, n := gpuByAddr[l.GPU], nicByAddr[l.NIC]
				key := g.Label + "/" + n.RDMA
				want, source := d.Matrix[g.Label][n.RDMA], "matrix ("+d.MatrixEvidence+")"
				if o, ok := exp.overrides[key]; ok {
					want, source = o, "override"
				}
				if want == "" && exp.classOf != nil {
					want, source = exp.classOf(d, g, n), "rule"
				}
				if want == "" {
					// The matrix omits this NIC (e.g. irdma ports on DGX
					// H100): the tree decides; check against NUMA at least.
					want = "NODE"
					if g.NUMA != n.NUMA {
						want = "SYS"
					}
					source = "NUMA rule for a pair the matrix omits"
				}
				if l.Class.String() != want {
					t.Errorf("%s (%s x %s): class %s, want %s from %s", key, l.GPU, l.NIC, l.Class, want, source)
				}
				checked++
			}
			if checked != len(wantGPUs)*len(wantNICs) {
				t.Errorf("checked %d pairs, want %d", checked, len(wantGPUs)*len(wantNICs))
			}

			// Rails: every GPU gets one of its published best NICs.
			if len(topo.Rails) != len(topo.GPUs) {
				t.Fatalf("%d rails for %d GPUs", len(topo.Rails), len(topo.GPUs))
			}
			bestNIC := d.BestNIC
			if exp.bestFrom != "" {
				other, err := RawDescription(exp.bestFrom)
				if err != nil {
					t.Fatal(err)
				}
				bestNIC = other.BestNIC
			}
			for _, r := range topo.Rails {
				g := gpuByAddr[r.GPU]
				nic, _ := topo.NIC(r.NIC)
				best := bestNIC[g.Label]
				if len(best) == 0 {
					t.Fatalf("description publishes no best NIC for %s", g.Label)
				}
				if !slices.ContainsFunc(best, func(b string) bool { return b == nic.RDMA || strings.HasPrefix(r.NIC, b+":") }) {
					t.Errorf("rail %s -> %s (%s, %s), published best %v", g.Label, nic.RDMA, r.NIC, r.Class, best)
				}
			}
		})
	}
}

// The optimal rails never let a NIC serve more than ceil(G/N) GPUs, and
// where a published best list has two NICs per GPU pair (DGX A100), the two
// GPUs of a pair get different NICs.
func TestRailsBalance(t *testing.T) {
	for _, name := range Names() {
		_, topo := discover(t, name, 0)
		limit := (len(topo.GPUs) + len(topo.NICs) - 1) / len(topo.NICs)
		use := map[string]int{}
		for _, r := range topo.Rails {
			use[r.NIC]++
			if use[r.NIC] > limit {
				t.Errorf("%s: NIC %s serves %d GPUs, limit %d", name, r.NIC, use[r.NIC], limit)
			}
		}
	}
	_, a100 := discover(t, "dgx-a100", 0)
	if a100.Rails[0].NIC == a100.Rails[1].NIC {
		t.Errorf("dgx-a100: GPU0 and GPU1 share %s although two PXB NICs are free", a100.Rails[0].NIC)
	}
}

func TestVFsAreDiscoveredWithTheirPF(t *testing.T) {
	_, topo := discover(t, "dgx-h100", 8)
	for _, n := range topo.NICs {
		if n.Vendor != 0x15b3 {
			if len(n.VFs) != 0 {
				t.Errorf("%s: non-ConnectX NIC has VFs", n.PCI)
			}
			continue
		}
		if n.NumVFs != 8 || len(n.VFs) != 8 || n.VFCount != 8 {
			t.Fatalf("%s: numvfs %d, %d VFs listed, want 8", n.PCI, n.NumVFs, len(n.VFs))
		}
		for i, vf := range n.VFs {
			if vf.Index != i || vf.Netdev != fmt.Sprintf("%sv%d", n.Netdev, i) || vf.RDMA == "" || vf.Uverbs == "" {
				t.Errorf("%s VF %d: %+v", n.PCI, i, vf)
			}
			wantVF := map[uint16]uint16{0x1021: 0x101e, 0x101b: 0x101c}[n.Device] // ConnectX-7, ConnectX-6
			if d, ok := topo.Device(vf.PCI); !ok || d.Device != wantVF || d.Vendor != 0x15b3 || d.NUMA != n.NUMA {
				t.Errorf("VF %s identity: %+v, want 15b3:%04x on NUMA %d", vf.PCI, d, wantVF, n.NUMA)
			}
			pf, ok := topo.NIC(vf.PCI)
			if !ok || pf.PCI != n.PCI {
				t.Errorf("NIC(%s) = %s, want PF %s", vf.PCI, pf.PCI, n.PCI)
			}
			for _, g := range topo.GPUs {
				if topo.Class(g.PCI, vf.PCI) != topo.Class(g.PCI, n.PCI) {
					t.Errorf("VF %s and PF %s differ in class to %s", vf.PCI, n.PCI, g.PCI)
				}
			}
		}
	}
}

func TestPartialDescriptionIsRejected(t *testing.T) {
	_, err := RawDescription("dgx2_partial.json")
	if !errors.Is(err, machine.ErrNoTree) {
		t.Fatalf("dgx2_partial.json: got %v, want ErrNoTree", err)
	}
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{"dgx-h100": "dgx-h100", "DGX_H100": "dgx-h100", "dgx1_v100": "dgx-1", "pfn_mn2a": "roce-8gpu-4nic"} {
		m, err := Lookup(in)
		if err != nil || m.Name != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", in, m.Name, err, want)
		}
	}
	if _, err := Lookup("dgx-9000"); err == nil || !strings.Contains(err.Error(), "dgx-h100") {
		t.Errorf("unknown machine error should list the built-in names, got %v", err)
	}
}

// The embedded descriptions that the project's shared machine descriptions
// also have are copies of them; when those sit beside the repository, they
// must match. The others (the models added here, their NCCL topology files)
// must be listed in machines/README.md.
func TestEmbeddedCopiesMatchShared(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join("..", "..", "shared", "machines")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("no shared machine descriptions at %s", shared)
	}
	for _, f := range Files() {
		want, err := os.ReadFile(filepath.Join(shared, f))
		if errors.Is(err, os.ErrNotExist) {
			if !bytes.Contains(readme, []byte("| "+f+" |")) {
				t.Errorf("%s is in neither %s nor machines/README.md", f, shared)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		got, _ := files.ReadFile(f)
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s", f, shared)
		}
	}
}
