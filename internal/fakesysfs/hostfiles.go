package fakesysfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SetNodeGUID writes an RDMA device's node_guid ("0c42:a103:00a1:b2c4"
// form) and, for an InfiniBand port 1, the port GUID half of GID 0.
func SetNodeGUID(root, rdma string, guid [8]byte) error {
	dir := filepath.Join(root, "class/infiniband", rdma)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("fakesysfs: RDMA device %s: %w", rdma, err)
	}
	if err := writeAtomic(filepath.Join(dir, "node_guid"), formatGUID(guid)); err != nil {
		return err
	}
	if readTrim(filepath.Join(dir, "ports/1/link_layer")) == "InfiniBand" {
		return writeAtomic(filepath.Join(dir, "ports/1/gids/0"), "fe80:0000:0000:0000:"+formatGUID(guid))
	}
	return nil
}

func formatGUID(g [8]byte) string {
	return fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7])
}

// SetPKeys writes an RDMA port's pkey table (pkeys/0..n-1).
func SetPKeys(root, rdma string, port int, pkeys ...uint16) error {
	dir := filepath.Join(root, "class/infiniband", rdma, "ports", strconv.Itoa(port), "pkeys")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, k := range pkeys {
		if err := writeAtomic(filepath.Join(dir, strconv.Itoa(i)), fmt.Sprintf("0x%04x", k)); err != nil {
			return err
		}
	}
	return nil
}

// SetNetdevMTU writes a network interface's mtu.
func SetNetdevMTU(root, netdev string, mtu int) error {
	p := filepath.Join(root, "class/net", netdev, "mtu")
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("fakesysfs: netdev %s: %w", netdev, err)
	}
	return writeAtomic(p, strconv.Itoa(mtu))
}

// SetLinkLayer writes an RDMA port's link_layer ("InfiniBand", "Ethernet").
func SetLinkLayer(root, rdma string, port int, linkLayer string) error {
	p := filepath.Join(root, "class/infiniband", rdma, "ports", strconv.Itoa(port), "link_layer")
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("fakesysfs: %s port %d: %w", rdma, port, err)
	}
	return writeAtomic(p, linkLayer)
}

// RemoveRoCEv2GIDs zeroes an Ethernet port's RoCE v2 GIDs, as a netdev
// that is down has. RemoveIPGIDs is a netdev up without an IP address.
func RemoveRoCEv2GIDs(root, rdma string, port int) error {
	return zeroGIDs(root, rdma, port, func(typ, _ string) bool { return typ == "RoCE v2" })
}

// RemoveIPGIDs zeroes an Ethernet port's GIDs of IP addresses, as removing
// the netdev's addresses does: the link-local GIDs stay.
func RemoveIPGIDs(root, rdma string, port int) error {
	return zeroGIDs(root, rdma, port, func(_, gid string) bool { return !strings.HasPrefix(gid, "fe80:") })
}

func zeroGIDs(root, rdma string, port int, which func(typ, gid string) bool) error {
	pd := filepath.Join(root, "class/infiniband", rdma, "ports", strconv.Itoa(port))
	types, _ := os.ReadDir(filepath.Join(pd, "gid_attrs/types"))
	for _, t := range types {
		if !which(readTrim(filepath.Join(pd, "gid_attrs/types", t.Name())), readTrim(filepath.Join(pd, "gids", t.Name()))) {
			continue
		}
		if err := writeAtomic(filepath.Join(pd, "gids", t.Name()), "0000:0000:0000:0000:0000:0000:0000:0000"); err != nil {
			return err
		}
	}
	return nil
}

// AddIOMMU gives the tree an IOMMU unit (class/iommu/<name>) and puts every
// PCI function into its own IOMMU group whose default domain has type
// domainType ("identity" for iommu=pt, "DMA" or "DMA-FQ" for translation).
func AddIOMMU(root, name, domainType string) error {
	if err := os.MkdirAll(filepath.Join(root, "devices/virtual/iommu", name), 0o755); err != nil {
		return err
	}
	if err := symlinkRel(root, filepath.Join("devices/virtual/iommu", name), filepath.Join("class/iommu", name)); err != nil {
		return err
	}
	devs, err := os.ReadDir(filepath.Join(root, "bus/pci/devices"))
	if err != nil {
		return err
	}
	for i, d := range devs {
		g := filepath.Join("kernel/iommu_groups", strconv.Itoa(i))
		if err := (&generator{root: root}).write(filepath.Join(g, "type"), domainType); err != nil {
			return err
		}
		dir, err := resolve(root, d.Name())
		if err != nil {
			return err
		}
		if err := symlinkRel(root, g, filepath.Join(dir, "iommu_group")); err != nil {
			return err
		}
	}
	return nil
}

// AddModule creates module/<name> (a loaded kernel module).
func AddModule(root, name string) error {
	return os.MkdirAll(filepath.Join(root, "module", name), 0o755)
}

// SetNetdevAddress writes a network interface's address.
func SetNetdevAddress(root, netdev, addr string) error {
	p := filepath.Join(root, "class/net", netdev, "address")
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("fakesysfs: netdev %s: %w", netdev, err)
	}
	return writeAtomic(p, addr)
}

// SetModuleParam writes module/<name>/parameters/<param>.
func SetModuleParam(root, name, param, value string) error {
	return (&generator{root: root}).write(filepath.Join("module", name, "parameters", param), value)
}
