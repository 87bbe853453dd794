package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/pciaddr"
)

// Readers for node setup and `railyard doctor`: SR-IOV state, addresses,
// MTUs, pkeys, PCI config space, IOMMU and kernel modules.

// PCIConfig reads a PCI function's config space (its sysfs "config" file)
// like every attribute: non-blocking, regular files only (a FIFO fails at
// once), at most MaxAttrSize bytes, the size of a PCIe function's extended
// config space. The kernel gives unprivileged readers only the first 64
// bytes; root reads 256 (conventional PCI) or 4096 (PCIe extended) bytes.
func (f FS) PCIConfig(addr string) ([]byte, error) {
	if !pciaddr.IsCanonical(addr) {
		return nil, fmt.Errorf("%q is not a PCI address", addr)
	}
	rel := filepath.Join("bus/pci/devices", addr, "config")
	b, err := f.readSmall(f.rel(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", rel, ErrNotFound)
	}
	return b, err
}

// SRIOVState is a PF's SR-IOV attributes and its VFs.
type SRIOVState struct {
	TotalVFs int // sriov_totalvfs
	NumVFs   int // sriov_numvfs
	// VFs are the virtfnN links, by index; their number may differ from
	// NumVFs while the kernel creates or removes VFs.
	VFs []VFRef
}

// VFRef is one virtfnN link of a PF.
type VFRef struct {
	Index int
	PCI   string
}

// SRIOV reads a PF's SR-IOV state; ErrNotFound when it has no SR-IOV
// capability (no sriov_totalvfs).
func (f FS) SRIOV(pf string) (SRIOVState, error) {
	dir := filepath.Join("bus/pci/devices", pf)
	var s SRIOVState
	var err error
	if s.TotalVFs, err = f.ReadInt(filepath.Join(dir, "sriov_totalvfs")); err != nil {
		return s, err
	}
	if s.NumVFs, err = f.ReadInt(filepath.Join(dir, "sriov_numvfs")); err != nil {
		return s, err
	}
	s.VFs, err = f.VFs(pf)
	return s, err
}

// Driver returns the driver a PCI function is bound to ("" when none).
func (f FS) Driver(addr string) (string, error) {
	d, err := f.LinkBase(filepath.Join("bus/pci/devices", addr, "driver"))
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return d, err
}

// NodeGUID reads an RDMA device's node_guid ("0c42:a103:00a1:b2c4").
func (f FS) NodeGUID(rdma string) ([8]byte, error) {
	s, err := f.ReadString(filepath.Join("class/infiniband", rdma, "node_guid"))
	if err != nil {
		return [8]byte{}, err
	}
	return ParseGUID(s)
}

// PortGUID returns an InfiniBand port's GUID: the low 8 bytes of GID 0.
func (f FS) PortGUID(rdma string, port int) ([8]byte, error) {
	s, err := f.ReadString(filepath.Join("class/infiniband", rdma, "ports", strconv.Itoa(port), "gids/0"))
	if err != nil {
		return [8]byte{}, err
	}
	parts := strings.Split(s, ":")
	if len(parts) != 8 {
		return [8]byte{}, fmt.Errorf("GID %q: want 8 groups", s)
	}
	return ParseGUID(strings.Join(parts[4:], ":"))
}

// PortPKeys returns the non-zero partition keys of an RDMA port
// (ports/N/pkeys/*), in table order.
func (f FS) PortPKeys(rdma string, port int) ([]uint16, error) {
	dir := filepath.Join("class/infiniband", rdma, "ports", strconv.Itoa(port), "pkeys")
	names, err := f.List(dir)
	if err != nil {
		return nil, err
	}
	idx := make([]int, 0, len(names))
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	var out []uint16
	for _, i := range idx {
		v, err := f.ReadHex(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil || v == 0 || v > 0xffff {
			continue
		}
		out = append(out, uint16(v))
	}
	return out, nil
}

// NetdevMTU reads a network interface's MTU.
func (f FS) NetdevMTU(name string) (int, error) {
	if err := validIfName(name); err != nil {
		return 0, err
	}
	return f.ReadInt(filepath.Join("class/net", name, "mtu"))
}

// NetdevAddress reads a network interface's hardware address
// ("b8:59:9f:01:02:03"; 20 bytes for IPoIB).
func (f FS) NetdevAddress(name string) (string, error) {
	if err := validIfName(name); err != nil {
		return "", err
	}
	return f.ReadString(filepath.Join("class/net", name, "address"))
}

// NetdevExists reports whether a network interface is in class/net (that
// is, in the namespace whose sysfs this is).
func (f FS) NetdevExists(name string) bool {
	if validIfName(name) != nil {
		return false
	}
	return f.lstat(f.rel("class/net", name)) == nil
}

func validIfName(name string) error {
	if name == "" || len(name) > 15 || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("invalid interface name %q", name)
	}
	return nil
}

// IOMMUs lists the IOMMU units in class/iommu ("dmar0", "ivhd0"); empty
// when the kernel runs without an IOMMU.
func (f FS) IOMMUs() ([]string, error) { return f.List("class/iommu") }

// IOMMUGroup returns the IOMMU group of a PCI function ("" without one).
func (f FS) IOMMUGroup(addr string) (string, error) {
	g, err := f.LinkBase(filepath.Join("bus/pci/devices", addr, "iommu_group"))
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return g, err
}

// IOMMUGroupType reads an IOMMU group's default domain type ("identity"
// for passthrough, "DMA" or "DMA-FQ" for translation).
func (f FS) IOMMUGroupType(group string) (string, error) {
	if group == "" || strings.ContainsAny(group, "/\x00") || group == "." || group == ".." {
		return "", fmt.Errorf("invalid IOMMU group %q", group)
	}
	return f.ReadString(filepath.Join("kernel/iommu_groups", group, "type"))
}

// ModuleLoaded reports whether a kernel module (or built-in component with
// parameters) is present in module/<name>.
func (f FS) ModuleLoaded(name string) bool {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return false
	}
	return f.statDir(f.rel("module", name)) == nil
}

// ParseGUID parses a GUID as sysfs prints it ("0c42:a103:00a1:b2c4") or as
// ip-link does ("0c:42:a1:03:00:a1:b2:c4").
func ParseGUID(s string) ([8]byte, error) {
	var out [8]byte
	h := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	if len(h) != 16 {
		return out, fmt.Errorf("GUID %q: want 16 hex digits", s)
	}
	for i := range 8 {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return out, fmt.Errorf("GUID %q: %w", s, err)
		}
		out[i] = byte(v)
	}
	return out, nil
}

// ModuleParam reads a kernel module parameter (module/<m>/parameters/<p>),
// such as ib_core's netns_mode ("Y": shared, "N": exclusive).
func (f FS) ModuleParam(module, param string) (string, error) {
	for _, s := range []string{module, param} {
		if s == "" || strings.ContainsAny(s, "/\x00") || s == "." || s == ".." {
			return "", fmt.Errorf("invalid module parameter %s/%s", module, param)
		}
	}
	return f.ReadString(filepath.Join("module", module, "parameters", param))
}
