package fakesysfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// resolve returns the real directory (relative to root) of a PCI function.
func resolve(root, addr string) (string, error) {
	link := filepath.Join(root, "bus/pci/devices", addr)
	target, err := os.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("fakesysfs: PCI device %s: %w", addr, err)
	}
	abs := filepath.Clean(filepath.Join(filepath.Dir(link), target))
	return filepath.Rel(root, abs)
}

func readTrim(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func firstEntry(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return ""
	}
	return entries[0].Name()
}

// nextIndex returns 1 + the highest N of the names "<prefix>N" in dir.
func nextIndex(dir, prefix string) int {
	entries, _ := os.ReadDir(dir)
	next := 0
	for _, e := range entries {
		if v, err := strconv.Atoi(strings.TrimPrefix(e.Name(), prefix)); err == nil && strings.HasPrefix(e.Name(), prefix) && v >= next {
			next = v + 1
		}
	}
	return next
}

var vfDeviceIDs = map[uint64]uint16{0x1013: 0x1014, 0x1015: 0x1016, 0x1017: 0x1018, 0x1019: 0x101a, 0x101b: 0x101c, 0x101d: 0x101e, 0x1021: 0x101e}

// AddVFs creates n more VFs on the SR-IOV capable PF at pfAddr, as writing
// sriov_numvfs does on a real node: each VF is a sibling function with its
// own netdev (<pf netdev>v<i>), RDMA device (mlx5_N), verbs device and
// physfn/virtfn links.
func AddVFs(root, pfAddr string, n int) error {
	return addVFs(context.Background(), root, pfAddr, n)
}

// addVFs is AddVFs that stops between VFs when ctx is done.
func addVFs(ctx context.Context, root, pfAddr string, n int) error {
	if n <= 0 {
		return nil
	}
	pfDir, err := resolve(root, pfAddr)
	if err != nil {
		return err
	}
	abs := filepath.Join(root, pfDir)
	total, err := strconv.Atoi(readTrim(filepath.Join(abs, "sriov_totalvfs")))
	if err != nil {
		return fmt.Errorf("fakesysfs: %s is not SR-IOV capable", pfAddr)
	}
	have, _ := strconv.Atoi(readTrim(filepath.Join(abs, "sriov_numvfs")))
	if have+n > total {
		return fmt.Errorf("fakesysfs: %s: %d VFs exceed sriov_totalvfs %d", pfAddr, have+n, total)
	}
	vendor, _ := strconv.ParseUint(strings.TrimPrefix(readTrim(filepath.Join(abs, "vendor")), "0x"), 16, 16)
	device, _ := strconv.ParseUint(strings.TrimPrefix(readTrim(filepath.Join(abs, "device")), "0x"), 16, 16)
	class, _ := strconv.ParseUint(strings.TrimPrefix(readTrim(filepath.Join(abs, "class")), "0x"), 16, 32)
	numa, _ := strconv.Atoi(readTrim(filepath.Join(abs, "numa_node")))
	pfNet := firstEntry(filepath.Join(abs, "net"))
	pfRDMA := firstEntry(filepath.Join(abs, "infiniband"))
	st := portState{state: "4: ACTIVE", phys: "5: LinkUp", rate: "100 Gb/sec (4X EDR)", linkLayer: "Ethernet"}
	if pfRDMA != "" {
		pd := filepath.Join(abs, "infiniband", pfRDMA, "ports/1")
		st.rate = readTrim(filepath.Join(pd, "rate"))
		st.linkLayer = readTrim(filepath.Join(pd, "link_layer"))
	}
	vfDevice, ok := vfDeviceIDs[device]
	if !ok {
		vfDevice = 0x101e
	}
	pf, ok := pciaddr.ParseCanonical(pfAddr)
	if !ok {
		return fmt.Errorf("fakesysfs: bad PCI address %q", pfAddr)
	}
	rid := int(pf.RID())
	nextRDMA := nextIndex(filepath.Join(root, "class/infiniband"), "mlx5_")
	nextUverbs := nextIndex(filepath.Join(root, "class/infiniband_verbs"), "uverbs")
	for i := have; i < have+n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var vfAddr string
		for {
			rid++
			if rid > 0xffff {
				return fmt.Errorf("fakesysfs: out of PCI bus numbers")
			}
			vfAddr = pciaddr.FromRID(pf.Domain, uint16(rid)).String()
			if _, err := os.Lstat(filepath.Join(root, "bus/pci/devices", vfAddr)); os.IsNotExist(err) {
				break
			}
		}
		vfDir := filepath.Join(filepath.Dir(pfDir), vfAddr)
		if err := writeFunction(root, vfDir, function{addr: vfAddr, vendor: uint16(vendor), device: vfDevice, class: uint32(class), numa: numa, driver: "mlx5_core"}); err != nil {
			return err
		}
		g := &generator{root: root}
		if err := g.symlink(pfDir, filepath.Join(vfDir, "physfn")); err != nil {
			return err
		}
		if err := g.symlink(vfDir, filepath.Join(pfDir, fmt.Sprintf("virtfn%d", i))); err != nil {
			return err
		}
		vf := vfEndpoints{pfAddr: pfAddr, vfDir: vfDir, index: i, pfNet: pfNet, pfRDMA: pfRDMA, st: st}
		if err := vf.write(root, &nextRDMA, &nextUverbs); err != nil {
			return err
		}
	}
	return writeAtomic(filepath.Join(abs, "sriov_numvfs"), strconv.Itoa(have+n))
}

// vfEndpoints are the netdev, RDMA and verbs devices of a VF bound to its
// kernel driver.
type vfEndpoints struct {
	pfAddr, vfDir, pfNet, pfRDMA string
	index                        int
	st                           portState
}

func (v vfEndpoints) write(root string, nextRDMA, nextUverbs *int) error {
	netdev := ""
	if v.pfNet != "" {
		netdev = fmt.Sprintf("%sv%d", v.pfNet, v.index)
		if err := writeNetdev(root, v.vfDir, netdev, v.st.linkLayer == "InfiniBand", macFor(v.pfAddr, v.index+1)); err != nil {
			return err
		}
	}
	if v.pfRDMA == "" {
		return nil
	}
	rdma := fmt.Sprintf("mlx5_%d", *nextRDMA)
	*nextRDMA++
	vst := v.st
	vst.netdev = netdev
	// An InfiniBand VF has no GUID until one is set through its PF (the
	// zero GUID subnet managers refuse); a RoCE VF's comes from its MAC.
	vst.nodeGUID = zeroGUID
	if vst.linkLayer != "InfiniBand" {
		vst.nodeGUID = guidFor(v.pfAddr, v.index+1)
	}
	if err := writeRDMA(root, v.vfDir, rdma, 1, vst); err != nil {
		return err
	}
	if err := writeUverbs(root, v.vfDir, fmt.Sprintf("uverbs%d", *nextUverbs), rdma); err != nil {
		return err
	}
	*nextUverbs++
	return nil
}

// RemoveVFs removes every VF of a PF, as writing 0 to sriov_numvfs does.
func RemoveVFs(root, pfAddr string) error {
	pfDir, err := resolve(root, pfAddr)
	if err != nil {
		return err
	}
	abs := filepath.Join(root, pfDir)
	links, _ := filepath.Glob(filepath.Join(abs, "virtfn*"))
	for _, l := range links {
		if err := RemoveDevice(root, filepath.Base(mustReadlink(l))); err != nil {
			return err
		}
		if err := os.Remove(l); err != nil {
			return err
		}
	}
	return writeAtomic(filepath.Join(abs, "sriov_numvfs"), "0")
}

func mustReadlink(p string) string {
	t, _ := os.Readlink(p)
	return t
}

// RemoveDevice removes a PCI function as a hot-unplug does: its directory,
// its bus/pci/devices entry and the class links into it.
func RemoveDevice(root, addr string) error {
	dir, err := resolve(root, addr)
	if err != nil {
		return err
	}
	if err := removeClassLinks(root, dir); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
		return err
	}
	return os.Remove(filepath.Join(root, "bus/pci/devices", addr))
}

// removeClassLinks removes the class/{net,infiniband,infiniband_verbs}
// entries that point below dir (relative to root).
func removeClassLinks(root, dir string) error {
	for _, class := range []string{"net", "infiniband", "infiniband_verbs"} {
		cd := filepath.Join(root, "class", class)
		entries, _ := os.ReadDir(cd)
		for _, e := range entries {
			l := filepath.Join(cd, e.Name())
			t, err := os.Readlink(l)
			if err != nil {
				continue
			}
			target, _ := filepath.Rel(root, filepath.Clean(filepath.Join(cd, t)))
			if strings.HasPrefix(target, dir+string(filepath.Separator)) {
				if err := os.Remove(l); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// BindDriver rebinds a function to another driver. Binding to "vfio-pci"
// removes its netdev, RDMA and verbs devices, as on a real node.
func BindDriver(root, addr, driver string) error {
	dir, err := resolve(root, addr)
	if err != nil {
		return err
	}
	g := &generator{root: root}
	drv := filepath.Join("bus/pci/drivers", driver)
	if err := g.mkdir(drv); err != nil {
		return err
	}
	if err := g.symlink(drv, filepath.Join(dir, "driver")); err != nil {
		return err
	}
	if driver != "vfio-pci" {
		return nil
	}
	for _, sub := range []string{"net", "infiniband", "infiniband_verbs"} {
		if err := removeClassLinks(root, filepath.Join(dir, sub)); err != nil {
			return err
		}
		if err := os.RemoveAll(filepath.Join(root, dir, sub)); err != nil {
			return err
		}
	}
	return nil
}

// Port states accepted by SetPortState.
const (
	PortActive = "ACTIVE"
	PortDown   = "DOWN"
)

// SetPortState sets an RDMA port ACTIVE (phys LinkUp) or DOWN (phys
// Disabled). Files are replaced atomically, so a concurrent reader sees the
// old or the new value, never an empty file.
func SetPortState(root, rdma string, port int, state string) error {
	var st, phys string
	switch state {
	case PortActive:
		st, phys = "4: ACTIVE", "5: LinkUp"
	case PortDown:
		st, phys = "1: DOWN", "3: Disabled"
	default:
		return fmt.Errorf("fakesysfs: unknown port state %q", state)
	}
	pd := filepath.Join(root, "class/infiniband", rdma, "ports", strconv.Itoa(port))
	if _, err := os.Stat(pd); err != nil {
		return fmt.Errorf("fakesysfs: %s port %d: %w", rdma, port, err)
	}
	if err := writeAtomic(filepath.Join(pd, "state"), st); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(pd, "phys_state"), phys)
}

func writeAtomic(p, content string) error {
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(content+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// PFs returns the addresses of SR-IOV capable functions in the tree, sorted.
func PFs(root string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(root, "bus/pci/devices/*/sriov_totalvfs"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		out = append(out, filepath.Base(filepath.Dir(m)))
	}
	sort.Strings(out)
	return out, nil
}
