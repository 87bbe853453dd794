package fakesysfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/machine"
)

// Options tune a generated tree.
type Options struct {
	// VFsPerPF creates this many VFs on every SR-IOV capable PF (ConnectX).
	VFsPerPF int
	// TotalVFs is written to sriov_totalvfs of SR-IOV capable PFs; 0 means
	// max(VFsPerPF, 16).
	TotalVFs int
}

// MaxVFsPerPF bounds Options.VFsPerPF. The kernel's sriov_totalvfs is a
// 16-bit count (up to 65535), but real NICs offer at most a few hundred
// VFs per PF (ConnectX-7: 127 per port by default, 255 at most with
// firmware settings), and each generated VF costs ~30 files: 256 per PF
// keeps every realistic tree while a typo such as 100000 cannot write
// gigabytes.
const MaxVFsPerPF = 256

// maxTotalVFs is the largest sriov_totalvfs the kernel can report.
const maxTotalVFs = 65535

// Generate writes the sysfs tree of a machine description below dir, which
// must be empty or not exist.
func Generate(dir string, d *machine.Description, opt Options) error {
	return GenerateContext(context.Background(), dir, d, opt)
}

// GenerateContext is Generate that stops when ctx is done. On any failure,
// cancellation included, it removes what it wrote: dir is left as it was
// (absent, or empty).
func GenerateContext(ctx context.Context, dir string, d *machine.Description, opt Options) (err error) {
	if opt.VFsPerPF < 0 || opt.VFsPerPF > MaxVFsPerPF {
		return fmt.Errorf("fakesysfs: %d VFs per PF: want 0 to %d", opt.VFsPerPF, MaxVFsPerPF)
	}
	if opt.TotalVFs < 0 || opt.TotalVFs > maxTotalVFs {
		return fmt.Errorf("fakesysfs: sriov_totalvfs %d: want 0 to %d", opt.TotalVFs, maxTotalVFs)
	}
	entries, statErr := os.ReadDir(dir)
	if statErr == nil && len(entries) > 0 {
		return fmt.Errorf("fakesysfs: %s is not empty", dir)
	}
	existed := statErr == nil
	defer func() {
		if err != nil {
			undo(dir, existed)
		}
	}()
	g := &generator{root: dir, opt: opt}
	for _, r := range d.Roots {
		if err := ctx.Err(); err != nil {
			return err
		}
		hb := filepath.Join("devices", r.Address)
		if err := g.mkdir(hb); err != nil {
			return err
		}
		for _, c := range r.Children {
			if err := g.node(c, hb, r.NUMA); err != nil {
				return err
			}
		}
	}
	// VFs come last so their addresses avoid every function of the tree.
	for _, pf := range g.sriovPFs {
		if err := addVFs(ctx, dir, pf, opt.VFsPerPF); err != nil {
			return err
		}
	}
	return nil
}

// undo removes a partly generated tree: dir itself when Generate created
// it, else everything in it (it was empty).
func undo(dir string, existed bool) {
	if !existed {
		_ = os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

type generator struct {
	root     string
	opt      Options
	uverbs   int
	sriovPFs []string
}

func (g *generator) mkdir(rel string) error {
	return os.MkdirAll(filepath.Join(g.root, rel), 0o755)
}

func (g *generator) write(rel, content string) error {
	p := filepath.Join(g.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content+"\n"), 0o644)
}

// symlink creates rel -> a relative path to target (both below the root).
func (g *generator) symlink(target, rel string) error {
	return symlinkRel(g.root, target, rel)
}

func symlinkRel(root, target, rel string) error {
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	t, err := filepath.Rel(filepath.Dir(p), filepath.Join(root, target))
	if err != nil {
		return err
	}
	_ = os.Remove(p)
	return os.Symlink(t, p)
}

func (g *generator) node(n *machine.Node, parentDir string, numa int) error {
	if n.NUMA >= 0 {
		numa = n.NUMA
	}
	dir := filepath.Join(parentDir, n.Address)
	if err := writeFunction(g.root, dir, function{
		addr: n.Address, vendor: n.Vendor, device: n.Device, class: n.Class,
		numa: numa, driver: driverFor(n),
	}); err != nil {
		return err
	}
	if err := writeLink(g.root, dir, defaultLink); err != nil {
		return err
	}
	if n.Kind == machine.KindNIC {
		if err := g.nic(n, dir); err != nil {
			return err
		}
	}
	for _, c := range n.Children {
		if err := g.node(c, dir, numa); err != nil {
			return err
		}
	}
	return nil
}

func driverFor(n *machine.Node) string {
	if n.Driver != "" {
		return n.Driver
	}
	switch {
	case n.Kind == machine.KindGPU && n.Vendor == 0x10de:
		return "nvidia"
	case n.Kind == machine.KindGPU && n.Vendor == 0x1002:
		return "amdgpu"
	case n.Kind != machine.KindNIC:
		if n.Class>>8 == 0x0604 {
			return "pcieport"
		}
		if n.Class>>8 == 0x0108 {
			return "nvme"
		}
		return ""
	case n.Vendor == 0x15b3 && (n.Device < 0x1011 || n.Device>>12 == 0x6):
		return "mlx4_core" // ConnectX-2 (0x67xx) and ConnectX-3 (0x1003, 0x1007)
	case n.Vendor == 0x15b3:
		return "mlx5_core" // Connect-IB, ConnectX-4 and later, BlueField
	case n.Vendor == 0x15ad && n.Device == 0x0820:
		return "vmw_pvrdma"
	case n.Vendor == 0x15ad && n.Device == 0x07b0:
		return "vmxnet3"
	case n.Vendor == 0x1d0f && n.Device == 0xefa0:
		return "efa"
	case n.Vendor == 0x1d0f:
		return "ena"
	case n.Vendor == 0x8086:
		return "ice"
	}
	return ""
}

// function is the identity of one PCI function.
type function struct {
	addr           string
	vendor, device uint16
	class          uint32
	numa           int
	driver         string
}

func writeFunction(root, dir string, f function) error {
	g := &generator{root: root}
	files := map[string]string{
		"vendor":    fmt.Sprintf("0x%04x", f.vendor),
		"device":    fmt.Sprintf("0x%04x", f.device),
		"class":     fmt.Sprintf("0x%06x", f.class),
		"numa_node": strconv.Itoa(f.numa),
	}
	for name, v := range files {
		if err := g.write(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	if err := g.symlink(dir, filepath.Join("bus/pci/devices", f.addr)); err != nil {
		return err
	}
	if f.driver != "" {
		drv := filepath.Join("bus/pci/drivers", f.driver)
		if err := g.mkdir(drv); err != nil {
			return err
		}
		if err := g.symlink(drv, filepath.Join(dir, "driver")); err != nil {
			return err
		}
	}
	return nil
}

// nic writes a NIC's netdev, RDMA device, ports and verbs device.
func (g *generator) nic(n *machine.Node, dir string) error {
	if n.Netdev != "" {
		if err := writeNetdev(g.root, dir, n.Netdev, n.LinkLayer == "InfiniBand", macFor(n.Address, 0)); err != nil {
			return err
		}
	}
	if n.RDMA == "" {
		return nil
	}
	state := portState{state: "4: ACTIVE", phys: "5: LinkUp", rate: n.Rate, linkLayer: n.LinkLayer, netdev: n.Netdev, nodeGUID: guidFor(n.Address, 0)}
	if state.netdev == "" {
		state.netdev = n.RoCENetdev
	}
	ports := n.Ports
	if ports < 1 {
		ports = 1
	}
	if err := writeRDMA(g.root, dir, n.RDMA, ports, state); err != nil {
		return err
	}
	if err := g.write(filepath.Join(dir, "infiniband", n.RDMA, "fw_ver"), firmwareFor(n.Vendor, n.Device)); err != nil {
		return err
	}
	if err := writeUverbs(g.root, dir, fmt.Sprintf("uverbs%d", g.uverbs), n.RDMA); err != nil {
		return err
	}
	g.uverbs++
	if driverFor(n) == "mlx5_core" {
		total := g.opt.TotalVFs
		if total == 0 {
			total = max(g.opt.VFsPerPF, 16)
		}
		if err := g.write(filepath.Join(dir, "sriov_totalvfs"), strconv.Itoa(total)); err != nil {
			return err
		}
		if err := g.write(filepath.Join(dir, "sriov_numvfs"), "0"); err != nil {
			return err
		}
		g.sriovPFs = append(g.sriovPFs, n.Address)
		if n.Netdev != "" && n.LinkLayer == "Ethernet" {
			if err := SetECN(g.root, n.Netdev, DefaultECN); err != nil {
				return err
			}
			for p := 1; p <= ports; p++ {
				tc := filepath.Join(dir, "infiniband", n.RDMA, "tc", strconv.Itoa(p), "traffic_class")
				if err := writeTrafficClass(filepath.Join(g.root, tc), LosslessTrafficClass); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func macFor(addr string, vf int) string {
	h := uint32(2166136261)
	for _, c := range addr {
		h = (h ^ uint32(c)) * 16777619
	}
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", byte(h>>24), byte(h>>16), byte(h>>8), byte(h), byte(vf))
}

func writeNetdev(root, dir, name string, infiniband bool, mac string) error {
	g := &generator{root: root}
	nd := filepath.Join(dir, "net", name)
	typ, mtu := "1", "1500"
	if infiniband {
		typ, mtu = "32", "4092"
	}
	for file, v := range map[string]string{"operstate": "up", "address": mac, "mtu": mtu, "type": typ} {
		if err := g.write(filepath.Join(nd, file), v); err != nil {
			return err
		}
	}
	if err := deviceLink(root, dir, nd); err != nil {
		return err
	}
	return g.symlink(nd, filepath.Join("class/net", name))
}

// deviceLink writes <child>/device -> the function directory dir (child is
// <dir>/<class>/<name>), spelled as the kernel spells it,
// "../../../<address>", so its last element is the PCI address.
func deviceLink(root, dir, child string) error {
	p := filepath.Join(root, child, "device")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	_ = os.Remove(p)
	return os.Symlink(filepath.Join("../../..", filepath.Base(dir)), p)
}

type portState struct {
	state, phys, rate, linkLayer string
	// netdev is the netdev the RoCE GIDs belong to ("" for none): the
	// function's own, or a paired function's (PVRDMA's vmxnet3).
	netdev string
	// nodeGUID is the device's node_guid ("" writes none).
	nodeGUID string
}

const zeroGUID = "0000:0000:0000:0000"

// guidFor derives a device's node GUID from its PCI address, with
// Mellanox's OUI and the 03:00 middle bytes of its EUI-64 GUIDs; vf is 0
// for a PF and index+1 for a VF.
func guidFor(addr string, vf int) string {
	h := uint32(2166136261)
	for _, c := range addr {
		h = (h ^ uint32(c)) * 16777619
	}
	h ^= uint32(vf) * 0x9e3779b1
	return fmt.Sprintf("0c42:a103:00%02x:%02x%02x", byte(h>>16), byte(h>>8), byte(h))
}

func writeRDMA(root, dir, name string, ports int, st portState) error {
	g := &generator{root: root}
	ib := filepath.Join(dir, "infiniband", name)
	if err := g.write(filepath.Join(ib, "node_type"), "1: CA"); err != nil {
		return err
	}
	if st.nodeGUID != "" {
		if err := g.write(filepath.Join(ib, "node_guid"), st.nodeGUID); err != nil {
			return err
		}
	}
	for p := 1; p <= ports; p++ {
		pd := filepath.Join(ib, "ports", strconv.Itoa(p))
		for file, v := range map[string]string{"state": st.state, "phys_state": st.phys, "rate": st.rate, "link_layer": st.linkLayer} {
			if err := g.write(filepath.Join(pd, file), v); err != nil {
				return err
			}
		}
		for idx, gid := range gidTable(st.linkLayer, st.netdev != "", st.nodeGUID) {
			if err := g.write(filepath.Join(pd, "gids", strconv.Itoa(idx)), gid.gid); err != nil {
				return err
			}
			if gid.typ != "" {
				if err := g.write(filepath.Join(pd, "gid_attrs/types", strconv.Itoa(idx)), gid.typ); err != nil {
					return err
				}
			}
			// The kernel ties every RoCE GID to its netdev.
			if gid.typ != "" && st.netdev != "" {
				if err := g.write(filepath.Join(pd, "gid_attrs/ndevs", strconv.Itoa(idx)), st.netdev); err != nil {
					return err
				}
			}
		}
	}
	if err := deviceLink(root, dir, ib); err != nil {
		return err
	}
	return g.symlink(ib, filepath.Join("class/infiniband", name))
}

type gidEntry struct{ gid, typ string }

// gidTable returns a port's GID table: the link-local GID (subnet prefix
// and port GUID) for InfiniBand;
// for RoCE the v1/v2 pair of the link-local GID at 0/1 and, once the netdev
// has an IPv4 address, the v1/v2 pair of it at 2/3 (the usual layout).
func gidTable(linkLayer string, withIP bool, nodeGUID string) []gidEntry {
	ll := "fe80:0000:0000:0000:0200:00ff:fe00:0001"
	if linkLayer != "Ethernet" {
		if nodeGUID != "" {
			ll = "fe80:0000:0000:0000:" + nodeGUID // port 1's GUID is the node's here
		}
		return []gidEntry{{gid: ll}}
	}
	out := []gidEntry{{ll, "IB/RoCE v1"}, {ll, "RoCE v2"}}
	if withIP {
		v4 := "0000:0000:0000:0000:0000:ffff:c0a8:0001"
		out = append(out, gidEntry{v4, "IB/RoCE v1"}, gidEntry{v4, "RoCE v2"})
	}
	return out
}

func writeUverbs(root, dir, name, rdma string) error {
	g := &generator{root: root}
	ud := filepath.Join(dir, "infiniband_verbs", name)
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "uverbs"))
	if err := g.write(filepath.Join(ud, "ibdev"), rdma); err != nil {
		return err
	}
	if err := g.write(filepath.Join(ud, "dev"), fmt.Sprintf("231:%d", 192+n)); err != nil {
		return err
	}
	return g.symlink(ud, filepath.Join("class/infiniband_verbs", name))
}
