package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// PCI vendors and classes discovery cares about.
const (
	vendorNVIDIA = 0x10de
	vendorAMD    = 0x1002
)

// Discover reads the sysfs tree at root ("" means /sys) and returns the
// node's topology. It fails only when the tree has no PCI bus at all or ctx
// is done; every other problem is a warning in the result.
func Discover(ctx context.Context, root string) (*topology.Topology, error) {
	return Options{}.Discover(ctx, root)
}

// ReadInventory reads the raw inventory without deriving classes or rails.
func ReadInventory(ctx context.Context, root string) (topology.Inventory, error) {
	return Options{}.ReadInventory(ctx, root)
}

// Discover is the package's Discover with these options. Its signature is
// Discover's, so a caller that takes a discovery function (the agent) can
// be handed opts.Discover.
func (o Options) Discover(ctx context.Context, root string) (*topology.Topology, error) {
	inv, err := o.ReadInventory(ctx, root)
	if err != nil {
		return nil, err
	}
	return topology.Build(inv), nil
}

// ReadInventory is the package's ReadInventory with these options.
func (o Options) ReadInventory(ctx context.Context, root string) (topology.Inventory, error) {
	fs := sysfs.New(root)
	fs.Recorder = o.Recorder
	inv, err := readInventory(ctx, fs)
	if err != nil {
		return inv, err
	}
	if o.NCCLTopology != nil {
		applyNCCLTopology(&inv, o.NCCLTopology, o.NCCLTopologyName)
	}
	checkInventory(fs, &inv)
	return inv, nil
}

func readInventory(ctx context.Context, fs sysfs.FS) (topology.Inventory, error) {
	r := &reader{fs: fs, inv: topology.Inventory{Root: fs.Root}}
	if _, err := os.Stat(fs.Path("bus/pci/devices")); err != nil {
		return topology.Inventory{}, fmt.Errorf("no PCI bus under %s: %w", fs.Root, err)
	}
	names, err := fs.List("bus/pci/devices")
	if err != nil {
		return topology.Inventory{}, fmt.Errorf("listing PCI devices: %w", err)
	}
	addrs := make([]string, 0, len(names))
	for _, n := range names {
		if !pciaddr.IsCanonical(n) {
			r.warn(filepath.Join("bus/pci/devices", n), "skipped: not a PCI address (DDDD:BB:DD.F)")
			continue
		}
		addrs = append(addrs, n)
	}
	read, err := r.readAll(ctx, addrs)
	if err != nil {
		return topology.Inventory{}, err
	}
	hostNUMA := map[string]int{}
	var hostOrder []string
	funcs := make(map[string]*fn, len(addrs))
	var firstErr error
	for i, addr := range addrs {
		f := read[i]
		r.inv.Warnings = append(r.inv.Warnings, f.warnings...)
		if f.err != nil {
			r.warn(addr, "skipped: "+f.err.Error())
			r.inv.Unreadable = append(r.inv.Unreadable, addr)
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", addr, f.err)
			}
			continue
		}
		funcs[addr] = f
		if _, ok := hostNUMA[f.dev.HostBridge]; !ok {
			hostNUMA[f.dev.HostBridge] = -1
			hostOrder = append(hostOrder, f.dev.HostBridge)
		}
		if hostNUMA[f.dev.HostBridge] < 0 && f.dev.NUMA >= 0 {
			hostNUMA[f.dev.HostBridge] = f.dev.NUMA
		}
	}
	// Listed functions of which none could be read are no node at all:
	// the tree is going away or every read fails (no file descriptors
	// left). An empty inventory would make every device vanish, and a
	// caller would mark them all unhealthy; an error keeps its last one.
	if len(addrs) > 0 && len(funcs) == 0 {
		return topology.Inventory{}, fmt.Errorf("none of the %d PCI functions under %s could be read: %w", len(addrs), fs.Path("bus/pci/devices"), firstErr)
	}
	for _, hb := range hostOrder {
		r.inv.HostBridges = append(r.inv.HostBridges, topology.HostBridge{Name: hb, NUMA: hostNUMA[hb]})
	}
	for _, addr := range addrs {
		f, ok := funcs[addr]
		if !ok || f.physfn != "" {
			continue // VFs are read with their PF
		}
		switch {
		case isGPU(f.dev):
			r.inv.GPUs = append(r.inv.GPUs, topology.GPU{PCI: addr, Vendor: f.dev.Vendor, Device: f.dev.Device, NUMA: f.dev.NUMA})
		case f.hasRDMA:
			r.inv.NICs = append(r.inv.NICs, r.readNIC(f, funcs))
		}
	}
	// After readNIC, which gives VFs their PF's identity.
	for _, addr := range addrs {
		if f, ok := funcs[addr]; ok {
			r.inv.Devices = append(r.inv.Devices, f.dev)
		}
	}
	return r.inv, nil
}

type reader struct {
	fs  sysfs.FS
	inv topology.Inventory
}

func (r *reader) warn(path, msg string) {
	r.inv.Warnings = append(r.inv.Warnings, topology.Warning{Path: path, Message: msg})
}

// fn is one PCI function as read from sysfs.
type fn struct {
	dev     topology.PCIDevice
	dir     string // relative to the root
	physfn  string // PF address when this is a VF
	hasRDMA bool
	// Endpoints of a network function.
	netdevs      []string
	rdma, uverbs string
	umad, issm   string
	ports        []topology.Port
	entries      []string // directory listing of an RDMA PF (virtfnN links)
	firmware     string   // an RDMA PF's fw_ver, "" if unreadable
	err          error    // the function could not be read
	warnings     []topology.Warning
}

func (f *fn) warn(path, msg string) {
	f.warnings = append(f.warnings, topology.Warning{Path: path, Message: msg})
}

// readAll reads every function with a few workers: sysfs reads are
// syscall-bound, and a node with thousands of VFs has ~20 files per VF.
func (r *reader) readAll(ctx context.Context, addrs []string) ([]*fn, error) {
	out := make([]*fn, len(addrs))
	workers := min(8, len(addrs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = r.readFunction(addrs[i])
			}
		}()
	}
	var err error
	for i := range addrs {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return out, nil
}

// isGPU reports whether a function is a GPU that compute frameworks use,
// by the rules of the vendors' own stacks (docs/topology.md):
//
//   - NVIDIA: any display controller (VGA 0x0300, 3D 0x0302, other 0x0380)
//     or processing accelerator (0x1200): the nvidia driver binds VGA and 3D
//     controllers and NVML, nvidia-smi and the device plugin (go-nvlib) count
//     both; NVIDIA makes no display-only server parts.
//   - AMD: a 3D controller, other display controller or processing
//     accelerator (Instinct parts use 0x0380 and 0x1200) always; a VGA
//     controller (0x0300) only when bound to amdgpu, the driver behind ROCm's
//     KFD. Server boards carry ATI VGA cores as BMC/onboard video (ES1000,
//     1002:515e, behind the chipset) that radeon or no driver binds: they
//     are no GPUs and get no rail.
func isGPU(d topology.PCIDevice) bool {
	base, sub := d.Class>>16, (d.Class>>8)&0xff
	switch d.Vendor {
	case vendorNVIDIA:
		return base == 0x03 || (base == 0x12 && sub == 0x00)
	case vendorAMD:
		switch {
		case base == 0x03 && sub == 0x00:
			return d.Driver == "amdgpu"
		case base == 0x03, base == 0x12 && sub == 0x00:
			return true
		}
	}
	return false
}

// devDir resolves bus/pci/devices/<addr> with one readlink; falls back to a
// full resolution for unusual trees.
func (r *reader) devDir(addr string) (string, error) {
	link := r.fs.Path("bus/pci/devices", addr)
	if t, err := os.Readlink(link); err == nil && !filepath.IsAbs(t) {
		rel, err := filepath.Rel(r.fs.Root, filepath.Join(filepath.Dir(link), t))
		if err == nil && strings.HasPrefix(rel, "devices"+string(filepath.Separator)) {
			return rel, nil
		}
	}
	return r.fs.PCIDeviceDir(addr)
}

func (r *reader) readFunction(addr string) *fn {
	dir, err := r.devDir(addr)
	if err != nil {
		return &fn{err: err}
	}
	// A VF is known by its physfn link; its vendor, class and NUMA node
	// are its PF's, so only its device ID, driver and endpoints are read (a
	// node may have thousands of VFs, each costing syscalls).
	if pf, err := r.fs.LinkBase(filepath.Join(dir, "physfn")); err == nil {
		f := &fn{dir: dir, physfn: pf}
		if f.dev, err = r.location(addr, dir); err != nil {
			return &fn{err: err}
		}
		device, err := r.fs.ReadHex(filepath.Join(dir, "device"))
		if err != nil {
			return &fn{err: fmt.Errorf("device: %w", err)}
		}
		f.dev.Device = uint16(device)
		if drv, err := r.fs.LinkBase(filepath.Join(dir, "driver")); err == nil {
			f.dev.Driver = drv
		}
		f.netdevs, f.rdma, f.uverbs, f.ports = r.readEndpoints(f, dir, addr)
		f.umad, f.issm = r.madDevices(f, addr)
		return f
	}
	f, err := r.readIdentity(addr, dir)
	if err != nil {
		return &fn{err: err}
	}
	// A function with an RDMA device is an RDMA NIC whatever its class:
	// InfiniBand HCAs of class 0x0c06 (ConnectX-2, QLogic TrueScale) and
	// VMware's PVRDMA (0x0280) have one. Bridges never do, and GPUs are
	// not read for it; other functions are listed for infiniband/ only.
	if f.dev.Bridge || isGPU(f.dev) {
		return f
	}
	if f.dev.Class>>16 != 0x02 {
		if ib, _ := r.fs.List(filepath.Join(f.dir, "infiniband")); len(ib) == 0 {
			return f
		}
	}
	f.netdevs, f.rdma, f.uverbs, f.ports = r.readEndpoints(f, f.dir, addr)
	f.umad, f.issm = r.madDevices(f, addr)
	f.hasRDMA = f.rdma != ""
	if f.hasRDMA {
		f.entries, _ = r.fs.List(f.dir)
		// One small file per NIC, read here by the workers; a NIC whose
		// fw_ver cannot be read is still a NIC, without a version.
		f.firmware, _ = r.fs.FirmwareVersion(f.rdma)
	}
	return f
}

// location places a function in the tree from its sysfs directory.
func (r *reader) location(addr, dir string) (topology.PCIDevice, error) {
	// devices/[platform path.../]pciDDDD:BB/[bridges...]/addr: Hyper-V VMs
	// put the host bridge below VMBus devices, so search for it.
	parts := strings.Split(filepath.ToSlash(dir), "/")
	hb := -1
	for i, p := range parts {
		if pciaddr.IsCanonicalHostBridge(p) {
			hb = i // the last one: VMD domains sit below a function of another
		}
	}
	if hb < 0 || hb >= len(parts)-1 || parts[len(parts)-1] != addr {
		return topology.PCIDevice{}, fmt.Errorf("unexpected sysfs path %s (no pciDDDD:BB host bridge above the device)", dir)
	}
	d := topology.PCIDevice{Address: addr, HostBridge: parts[hb], NUMA: -1}
	if p := parts[len(parts)-2]; len(parts)-2 > hb && pciaddr.IsCanonical(p) {
		d.Parent = p
	}
	return d, nil
}

func (r *reader) readIdentity(addr, dir string) (*fn, error) {
	d, err := r.location(addr, dir)
	if err != nil {
		return nil, err
	}
	vendor, err := r.fs.ReadHex(filepath.Join(dir, "vendor"))
	if err != nil {
		return nil, fmt.Errorf("vendor: %w", err)
	}
	device, err := r.fs.ReadHex(filepath.Join(dir, "device"))
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	class, err := r.fs.ReadHex(filepath.Join(dir, "class"))
	if err != nil {
		return nil, fmt.Errorf("class: %w", err)
	}
	d.Vendor, d.Device, d.Class = uint16(vendor), uint16(device), uint32(class)
	d.Bridge = d.Class>>8 == 0x0604
	f := &fn{dev: d, dir: dir}
	if s, err := r.fs.ReadString(filepath.Join(dir, "numa_node")); err == nil {
		if f.dev.NUMA, err = sysfs.ParseNUMANode(s); err != nil {
			f.warn(addr, err.Error())
		}
	} else if !errors.Is(err, sysfs.ErrNotFound) {
		f.warn(addr, "numa_node: "+err.Error())
	}
	if drv, err := r.fs.LinkBase(filepath.Join(dir, "driver")); err == nil {
		f.dev.Driver = drv
	}
	return f, nil
}

// readNIC reads an RDMA-capable PF and its VFs.
func (r *reader) readNIC(f *fn, funcs map[string]*fn) topology.NIC {
	n := topology.NIC{PCI: f.dev.Address, Vendor: f.dev.Vendor, Device: f.dev.Device, Driver: f.dev.Driver, NUMA: f.dev.NUMA}
	n.Netdevs, n.RDMA, n.Uverbs, n.Ports = f.netdevs, f.rdma, f.uverbs, f.ports
	n.UMAD, n.ISSM, n.Firmware = f.umad, f.issm, f.firmware
	if len(n.Ports) > 0 {
		n.LinkLayer = n.Ports[0].LinkLayer
	}
	if len(n.Netdevs) > 0 {
		n.Netdev = n.Netdevs[0]
	} else {
		r.pairedNetdev(f, &n)
	}
	for _, p := range n.Ports {
		if !p.Active() {
			state, phys := p.State, p.PhysState
			if state == "" {
				state = "unreadable"
			}
			if phys == "" {
				phys = "physical state unknown"
			}
			r.warn(n.PCI, fmt.Sprintf("%s port %d is %s (%s)", n.RDMA, p.Num, state, phys))
		}
	}
	if v, err := r.fs.ReadInt(filepath.Join(f.dir, "sriov_totalvfs")); err == nil {
		n.TotalVFs = v
	}
	if v, err := r.fs.ReadInt(filepath.Join(f.dir, "sriov_numvfs")); err == nil {
		n.NumVFs = v
	}
	for _, e := range f.entries {
		idx, ok := strings.CutPrefix(e, "virtfn")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			r.warn(n.PCI, fmt.Sprintf("%s: not a VF link (virtfnN): ignored", sysfs.Quote(e)))
			continue
		}
		addr, err := r.fs.LinkBase(filepath.Join(f.dir, e))
		if err != nil {
			r.warn(n.PCI, fmt.Sprintf("%s: %v", e, err))
			continue
		}
		vfn, ok := funcs[addr]
		if !ok {
			r.warn(addr, fmt.Sprintf("VF %d of %s vanished during discovery", i, n.PCI))
			continue
		}
		vf := topology.VF{Index: i, PCI: addr, Driver: vfn.dev.Driver, RDMA: vfn.rdma, Uverbs: vfn.uverbs,
			UMAD: vfn.umad, ISSM: vfn.issm, Ports: inheritLink(vfn.ports, n.Ports)}
		vfn.dev.Vendor, vfn.dev.Class, vfn.dev.NUMA = f.dev.Vendor, f.dev.Class, f.dev.NUMA
		if len(vfn.netdevs) > 0 {
			vf.Netdev = vfn.netdevs[0]
		} else if vf.Driver != "vfio-pci" {
			r.warn(addr, fmt.Sprintf("VF %d of %s has no netdev (driver %q)", i, n.PCI, vf.Driver))
		}
		n.VFs = append(n.VFs, vf)
	}
	slices.SortFunc(n.VFs, func(a, b topology.VF) int { return a.Index - b.Index })
	if n.NumVFs != len(n.VFs) {
		r.warn(n.PCI, fmt.Sprintf("sriov_numvfs is %d but %d VFs exist", n.NumVFs, len(n.VFs)))
	}
	return n
}

// inheritLink fills a VF port's physical-link fields from its PF's port 1
// when the VF read only its state.
func inheritLink(vf, pf []topology.Port) []topology.Port {
	if len(pf) == 0 {
		return vf
	}
	for i := range vf {
		p := &vf[i]
		if p.PhysState == "" && p.Rate == "" && p.LinkLayer == "" {
			p.PhysState, p.Rate, p.RateGbps, p.LinkLayer = pf[0].PhysState, pf[0].Rate, pf[0].RateGbps, pf[0].LinkLayer
		}
	}
	return vf
}

// readEndpoints reads a function's netdevs, its first RDMA device with its
// ports, and its verbs device.
func (r *reader) readEndpoints(f *fn, dir, addr string) (netdevs []string, rdma, uverbs string, ports []topology.Port) {
	netdevs, _ = r.fs.List(filepath.Join(dir, "net"))
	rdmas, _ := r.fs.List(filepath.Join(dir, "infiniband"))
	if len(rdmas) > 0 {
		rdma = rdmas[0]
		if len(rdmas) > 1 {
			f.warn(addr, fmt.Sprintf("several RDMA devices %v; using %s", rdmas, rdma))
		}
		ibDir := filepath.Join(dir, "infiniband", rdma)
		if f.physfn != "" {
			ports = r.readVFPort(f, ibDir, addr)
		} else {
			ports = r.readPorts(f, ibDir, addr)
		}
	}
	if rdma == "" {
		return netdevs, "", "", nil
	}
	if uv, _ := r.fs.List(filepath.Join(dir, "infiniband_verbs")); len(uv) > 0 {
		uverbs = uv[0]
	} else {
		f.warn(addr, rdma+" has no verbs device (infiniband_verbs)")
	}
	return netdevs, rdma, uverbs, ports
}

// madDevices reads the umad/issm char devices of a function with an RDMA
// device (InfiniBand functions have them; RoCE ones usually too).
func (r *reader) madDevices(f *fn, addr string) (umad, issm string) {
	if f.rdma == "" {
		return "", ""
	}
	umad, issm, _ = r.fs.MADDevices(addr)
	return umad, issm
}

// readVFPort reads a VF's single port: only its state, because a VF shares
// its PF's physical link (phys_state, rate, link layer are copied from the
// PF in readNIC). Its RoCE GIDs are not read: they change when the VF moves
// into a pod's namespace. A VF without ports/1 gets the full read.
func (r *reader) readVFPort(f *fn, ibDir, addr string) []topology.Port {
	s, err := r.fs.ReadString(filepath.Join(ibDir, "ports/1/state"))
	if err != nil {
		return r.readPorts(f, ibDir, addr)
	}
	p := topology.Port{Num: 1}
	if p.State, err = sysfs.ParsePortState(s); err != nil {
		f.warn(addr, fmt.Sprintf("port 1: %v", err))
	}
	return []topology.Port{p}
}

func (r *reader) readPorts(f *fn, ibDir, addr string) []topology.Port {
	names, _ := r.fs.List(filepath.Join(ibDir, "ports"))
	var ports []topology.Port
	for _, name := range names {
		num, err := strconv.Atoi(name)
		if err != nil || num < 0 {
			f.warn(addr, fmt.Sprintf("ports/%s: not a port number: ignored", sysfs.Quote(name)))
			continue
		}
		pd := filepath.Join(ibDir, "ports", name)
		p := topology.Port{Num: num}
		var errs []error
		if s, err := r.fs.ReadString(filepath.Join(pd, "state")); err != nil {
			errs = append(errs, err)
		} else if p.State, err = sysfs.ParsePortState(s); err != nil {
			errs = append(errs, err)
		}
		if s, err := r.fs.ReadString(filepath.Join(pd, "phys_state")); err == nil {
			if p.PhysState, err = sysfs.ParsePortState(s); err != nil {
				errs = append(errs, err)
			}
		} else if !errors.Is(err, sysfs.ErrNotFound) {
			errs = append(errs, err)
		}
		if s, err := r.fs.ReadString(filepath.Join(pd, "rate")); err == nil {
			if p.RateGbps, err = sysfs.ParseRate(s); err != nil {
				errs = append(errs, err)
			} else {
				p.Rate = s
			}
		} else if !errors.Is(err, sysfs.ErrNotFound) {
			errs = append(errs, err)
		}
		if s, err := r.fs.ReadString(filepath.Join(pd, "link_layer")); err == nil {
			if sysfs.NeedsEscape(s) {
				errs = append(errs, fmt.Errorf("link_layer %s: not a name", sysfs.Quote(s)))
			} else {
				p.LinkLayer = s // InfiniBand, Ethernet or Unknown
			}
		} else if !errors.Is(err, sysfs.ErrNotFound) {
			errs = append(errs, err)
		}
		if p.LinkLayer == "Ethernet" {
			p.RoCEv2GIDs, p.RoutableRoCEv2GIDs = r.roceV2GIDs(pd)
		}
		if len(errs) > 0 {
			f.warn(addr, fmt.Sprintf("port %d: %v", num, errors.Join(errs...)))
		}
		ports = append(ports, p)
	}
	return ports
}

// roceV2GIDs returns the GID indexes of type "RoCE v2" whose GID is set,
// and those of them that are routable (not link-local).
func (r *reader) roceV2GIDs(portDir string) (set, routable []int) {
	types, _ := r.fs.List(filepath.Join(portDir, "gid_attrs/types"))
	var out []int
	for _, t := range types {
		idx, err := strconv.Atoi(t)
		if err != nil {
			continue
		}
		typ, err := r.fs.ReadString(filepath.Join(portDir, "gid_attrs/types", t))
		if err != nil || !strings.EqualFold(typ, "RoCE v2") {
			continue
		}
		gid, err := r.fs.ReadString(filepath.Join(portDir, "gids", t))
		if err != nil || sysfs.IsZeroGID(gid) {
			continue
		}
		out = append(out, idx)
		if !sysfs.IsLinkLocalGID(gid) {
			routable = append(routable, idx)
		}
	}
	slices.Sort(out)
	slices.Sort(routable)
	return out, routable
}
