package nodesetup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// SRIOV is the kernel's SR-IOV control: netops.SRIOVSysfs on a node,
// fakesysfs.Kernel in tests.
type SRIOV interface {
	// SetNumVFs writes the PF's sriov_numvfs (EBUSY from a non-zero count
	// to another one).
	SetNumVFs(ctx context.Context, pf string, n int) error
	// Bind binds a PCI function to driver (rebinding it when it has it).
	Bind(ctx context.Context, addr, driver string) error
}

// VFOps are the VF address operations made through the PF's netdev.
type VFOps interface {
	VFAddresses(ctx context.Context, pf string, vf int) (netops.VFAddresses, error)
	SetVFGUID(ctx context.Context, pf string, vf int, guid net.HardwareAddr) error
	SetVFMAC(ctx context.Context, pf string, vf int, mac net.HardwareAddr) error
}

var (
	_ SRIOV = netops.SRIOVSysfs{}
	_ VFOps = netops.Linux{}
)

// ErrInUse is wrapped by the error of a change refused because it would
// destroy VFs that pods use.
var ErrInUse = errors.New("VFs in use")

// ErrUsageUnknown is wrapped by the error of a run that left VFs as they
// were because a usage source could not tell which VFs are in use.
var ErrUsageUnknown = errors.New("which VFs are in use is unknown")

// Applier applies node policies.
type Applier struct {
	FS    sysfs.FS
	SRIOV SRIOV
	VF    VFOps
	// DCB and ECN set the PFC, trust and ECN of PFs whose policy has a
	// qos (netops.Linux and netops.ECNSysfs on a node).
	DCB netops.DCBOps
	ECN ECNOps
	// Usage are asked which VFs are in use before VFs are destroyed,
	// rebound or readdressed. When one cannot answer, any VF may be in
	// use: none is destroyed, and VFs that existed before the run are
	// left as they are.
	Usage []UsageSource
}

// Change is one thing Apply changed.
type Change struct {
	PF   string `json:"pf"`
	VF   int    `json:"vf"`            // -1 for the PF itself
	PCI  string `json:"pci,omitempty"` // the VF's
	What string `json:"what"`          // "numVFs", "guid", "mac", "driver", "rebind"
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

func (c Change) String() string {
	who := c.PF
	if c.VF >= 0 {
		who = fmt.Sprintf("%s VF %d (%s)", c.PF, c.VF, c.PCI)
	}
	switch {
	case c.From == "" && c.To == "":
		return fmt.Sprintf("%s: %s", who, c.What)
	case c.From == "":
		return fmt.Sprintf("%s: %s %s", who, c.What, c.To)
	}
	return fmt.Sprintf("%s: %s %s -> %s", who, c.What, c.From, c.To)
}

// Result is what one Apply did.
type Result struct {
	Changes []Change `json:"changes"`
	// Notes are things left alone and why (VFs in use, a usage source
	// that could not answer).
	Notes []string `json:"notes,omitempty"`
	// Partitions are OpenSM partitions.conf lines for PFs with a pkey:
	// the subnet manager, not the node, enforces partitions.
	Partitions []string `json:"partitions,omitempty"`
}

// Apply makes the node match p. It first resolves every entry to its PF
// and refuses, changing nothing, a policy naming one PF twice (by PCI
// address and by netdev). Then it handles every PF of the policy even
// when one fails, and returns the errors of all failed PFs joined.
func (a *Applier) Apply(ctx context.Context, p *v1alpha1.NodePolicy) (Result, error) {
	res := Result{Changes: []Change{}}
	addrs := make([]string, len(p.PFs))
	errs := make([]error, len(p.PFs))
	for i := range p.PFs {
		addrs[i], errs[i] = a.resolve(&p.PFs[i])
	}
	if err := v1alpha1.CheckResolved(p, addrs); err != nil {
		return res, fmt.Errorf("%w\nnothing changed", err)
	}
	var failed []error
	for i := range p.PFs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		err := errs[i]
		if err == nil {
			err = a.applyPF(ctx, &p.PFs[i], addrs[i], &res)
		}
		if q := p.PFs[i].QoS; q != nil && errs[i] == nil {
			err = errors.Join(err, a.applyQoS(ctx, q, addrs[i], &res))
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("PF %s: %w", p.PFs[i].Name(), err))
		}
	}
	return res, errors.Join(failed...)
}

// resolve returns the PCI address of the PF an entry names.
func (a *Applier) resolve(pol *v1alpha1.PF) (string, error) {
	if pol.PCIAddress != "" {
		return pol.PCIAddress, nil
	}
	return a.FS.NetdevPCIAddress(pol.Netdev)
}

// pfInfo is what Apply reads about a PF.
type pfInfo struct {
	addr, netdev, driver, rdma, linkLayer string
	guid                                  [8]byte
}

func (a *Applier) readPF(addr string) (pfInfo, error) {
	pf := pfInfo{addr: addr}
	if _, err := a.FS.PCIDeviceDir(pf.addr); err != nil {
		return pf, err
	}
	var err error
	if pf.driver, err = a.FS.Driver(pf.addr); err != nil || pf.driver == "" {
		return pf, fmt.Errorf("PF %s has no driver bound: its VFs could not be configured", pf.addr)
	}
	if n, _ := a.FS.Netdevs(pf.addr); len(n) > 0 {
		pf.netdev = n[0]
	}
	if r, _ := a.FS.RDMADevices(pf.addr); len(r) > 0 {
		pf.rdma = r[0]
		pf.linkLayer, _ = a.FS.ReadString(filepath.Join("class/infiniband", pf.rdma, "ports/1/link_layer"))
		pf.guid, _ = a.FS.NodeGUID(pf.rdma)
	}
	if pf.guid == ([8]byte{}) && pf.netdev != "" && pf.linkLayer != v1alpha1.LinkLayerInfiniBand {
		if mac, err := a.FS.NetdevAddress(pf.netdev); err == nil {
			pf.guid, _ = guidFromMAC(mac)
		}
	}
	return pf, nil
}

func (a *Applier) applyPF(ctx context.Context, pol *v1alpha1.PF, addr string, res *Result) error {
	pf, err := a.readPF(addr)
	if err != nil {
		return err
	}
	if pol.LinkLayer != "" && pf.linkLayer != "" && pol.LinkLayer != pf.linkLayer {
		return fmt.Errorf("link layer is %s, the policy wants %s: the port type is a firmware setting "+
			"(mlxconfig -d %s set LINK_TYPE_P1=%s, then reboot); nothing changed",
			pf.linkLayer, pol.LinkLayer, pf.addr, map[string]string{"InfiniBand": "1", "Ethernet": "2"}[pol.LinkLayer])
	}
	st, err := a.FS.SRIOV(pf.addr)
	if err != nil {
		return fmt.Errorf("no SR-IOV (sriov_totalvfs): %w", err)
	}
	if pol.NumVFs > st.TotalVFs {
		return fmt.Errorf("numVFs %d exceeds sriov_totalvfs %d (raise the firmware's NUM_OF_VFS with mlxconfig); nothing changed", pol.NumVFs, st.TotalVFs)
	}
	// VFs this run creates are in use by no one; the others may be.
	created := st.NumVFs != pol.NumVFs
	if created {
		if err := a.setCount(ctx, pf, st, pol.NumVFs, res); err != nil {
			return err
		}
		if st, err = a.FS.SRIOV(pf.addr); err != nil {
			return err
		}
	}
	if len(st.VFs) != pol.NumVFs {
		return fmt.Errorf("sriov_numvfs is %d but %d VFs exist (the kernel is still creating them?); run again", st.NumVFs, len(st.VFs))
	}
	vfs := make([]string, len(st.VFs))
	for i, v := range st.VFs {
		vfs[i] = v.PCI
	}
	inUse, unknown := a.usage(ctx, vfs)
	// Without knowing which VFs are in use, the VFs that existed before
	// this run are left as they are: their changes are held back.
	c := &changer{res: res, hold: unknown != nil && !created}
	if unknown != nil && created {
		res.Notes = append(res.Notes, fmt.Sprintf("%s: configured the VFs this run created, although %s", pf.addr, unknown))
	}
	var errs []error
	var guids []net.HardwareAddr
	for _, v := range st.VFs {
		if who := inUse[v.PCI]; len(who) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s VF %d (%s) is in use (%s): left as it is", pf.addr, v.Index, v.PCI, strings.Join(who, "; ")))
			if g := a.vfGUID(ctx, pf, v); g != nil {
				guids = append(guids, g)
			}
			continue
		}
		g, err := a.applyVF(ctx, pol, pf, v, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("VF %d (%s): %w", v.Index, v.PCI, err))
		}
		if c.hold {
			g = a.vfGUID(ctx, pf, v) // the GUID it has, not the one held back
		}
		if g != nil {
			guids = append(guids, g)
		}
	}
	if len(c.held) > 0 {
		lines := make([]string, len(c.held))
		for i, ch := range c.held {
			lines[i] = "  " + ch.String()
		}
		errs = append(errs, fmt.Errorf("%w: these changes to VFs that may be in use were held back, nothing of them done:\n%s\nrun again once every usage source answers:\n%w",
			ErrUsageUnknown, strings.Join(lines, "\n"), unknown))
	}
	if pol.PKey != "" && pf.linkLayer == v1alpha1.LinkLayerInfiniBand && len(guids) > 0 {
		pkey, _ := v1alpha1.ParsePKey(pol.PKey)
		res.Partitions = append(res.Partitions, OpenSMPartition(pkey, guids))
	}
	return errors.Join(errs...)
}

// changer makes a PF's VF changes and records them in res or, when hold
// is set, records them in held without making them.
type changer struct {
	res  *Result
	hold bool
	held []Change
}

// do makes the change ch with f (unless held) and records it.
func (c *changer) do(ch Change, f func() error) error {
	if c.hold {
		c.held = append(c.held, ch)
		return nil
	}
	if err := f(); err != nil {
		return err
	}
	c.res.Changes = append(c.res.Changes, ch)
	return nil
}

// usage merges the answers of every usage source. unknown joins the
// errors of the sources that could not (fully) answer: then any VF may be
// in use.
func (a *Applier) usage(ctx context.Context, vfs []string) (inUse map[string][]string, unknown error) {
	inUse = map[string][]string{}
	if len(vfs) == 0 {
		return inUse, nil
	}
	var errs []error
	for _, src := range a.Usage {
		m, err := src.Usage(ctx, vfs)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s could not (fully) tell which VFs are in use: %w", src.Name(), err))
		}
		for vf, who := range m {
			inUse[vf] = append(inUse[vf], who...)
		}
	}
	return inUse, errors.Join(errs...)
}

// setCount changes a PF's VF count, through 0 as the kernel requires,
// after checking that no VF it destroys is in use.
func (a *Applier) setCount(ctx context.Context, pf pfInfo, st sysfs.SRIOVState, want int, res *Result) error {
	if st.NumVFs != 0 || len(st.VFs) > 0 {
		vfs := make([]string, len(st.VFs))
		for i, v := range st.VFs {
			vfs[i] = v.PCI
		}
		inUse, unknown := a.usage(ctx, vfs)
		if len(inUse) > 0 {
			var lines []string
			for _, v := range st.VFs {
				if who := inUse[v.PCI]; len(who) > 0 {
					lines = append(lines, fmt.Sprintf("  VF %d (%s): %s", v.Index, v.PCI, strings.Join(who, "; ")))
				}
			}
			return fmt.Errorf("%w: changing numVFs %d -> %d destroys every VF of the PF (the kernel changes the count only through 0), "+
				"and these are in use; nothing changed — drain the pods first:\n%s", ErrInUse, st.NumVFs, want, strings.Join(lines, "\n"))
		}
		if unknown != nil {
			return fmt.Errorf("%w: changing numVFs %d -> %d destroys every VF of the PF (the kernel changes the count only through 0), "+
				"and any may be in use; nothing changed — run again once every usage source answers:\n%w", ErrUsageUnknown, st.NumVFs, want, unknown)
		}
		if err := a.SRIOV.SetNumVFs(ctx, pf.addr, 0); err != nil {
			return fmt.Errorf("removing VFs: %w", err)
		}
		res.Changes = append(res.Changes, Change{PF: pf.addr, VF: -1, What: "numVFs", From: fmt.Sprint(st.NumVFs), To: "0"})
	}
	if want == 0 {
		return nil
	}
	if err := a.SRIOV.SetNumVFs(ctx, pf.addr, want); err != nil {
		return fmt.Errorf("creating %d VFs: %w", want, err)
	}
	res.Changes = append(res.Changes, Change{PF: pf.addr, VF: -1, What: "numVFs", From: "0", To: fmt.Sprint(want)})
	return nil
}

// vfGUID is the GUID the PF reports for an InfiniBand VF (nil for others
// or when unknown).
func (a *Applier) vfGUID(ctx context.Context, pf pfInfo, v sysfs.VFRef) net.HardwareAddr {
	if pf.linkLayer != v1alpha1.LinkLayerInfiniBand || pf.netdev == "" {
		return nil
	}
	cur, err := a.VF.VFAddresses(ctx, pf.netdev, v.Index)
	if err != nil || cur.PortGUID == nil {
		return nil
	}
	return cur.PortGUID
}

// applyVF sets one VF's address and driver; it returns the VF's GUID
// (InfiniBand) for the partition line.
func (a *Applier) applyVF(ctx context.Context, pol *v1alpha1.PF, pf pfInfo, v sysfs.VFRef, c *changer) (net.HardwareAddr, error) {
	ib := pf.linkLayer == v1alpha1.LinkLayerInfiniBand
	var want net.HardwareAddr // the address the VF must have, nil: any
	switch {
	case ib && pol.GUIDs == v1alpha1.AddressDerived, !ib && pol.MACs == v1alpha1.AddressDerived:
		if pf.guid == ([8]byte{}) {
			return nil, fmt.Errorf("the PF has no node GUID nor MAC to derive addresses from (set guids/macs: keep)")
		}
		if pf.netdev == "" {
			return nil, fmt.Errorf("the PF has no netdev to set VF addresses through")
		}
		if ib {
			want = DeriveGUID(pf.guid, v.Index)
		} else {
			if v.Index > MaxMACVF {
				return nil, fmt.Errorf("derived MACs encode VF indexes up to %d (set macs: keep)", MaxMACVF)
			}
			want = DeriveMAC(pf.guid, v.Index)
		}
	}
	if want != nil {
		cur, err := a.VF.VFAddresses(ctx, pf.netdev, v.Index)
		if err != nil {
			return nil, fmt.Errorf("reading its addresses through %s: %w", pf.netdev, err)
		}
		have := cur.MAC
		what := "mac"
		if ib {
			have, what = cur.NodeGUID, "guid"
			if have != nil && !bytes.Equal(cur.PortGUID, have) {
				have = cur.PortGUID // a differing port GUID needs the set too
			}
		}
		if !bytes.Equal(have, want) {
			err := c.do(Change{PF: pf.addr, VF: v.Index, PCI: v.PCI, What: what, From: addrString(have), To: want.String()}, func() error {
				if ib {
					return a.VF.SetVFGUID(ctx, pf.netdev, v.Index, want)
				}
				return a.VF.SetVFMAC(ctx, pf.netdev, v.Index, want)
			})
			if err != nil {
				return nil, fmt.Errorf("setting its %s: %w", what, err)
			}
		}
	}
	drv, err := a.FS.Driver(v.PCI)
	if err != nil {
		return want, err
	}
	wantDrv := vfKernelDriver(pf.driver, drv)
	if pol.VFDriver == v1alpha1.DriverVFIO {
		wantDrv = "vfio-pci"
	}
	switch {
	case drv != wantDrv:
		err := c.do(Change{PF: pf.addr, VF: v.Index, PCI: v.PCI, What: "driver", From: orNone(drv), To: wantDrv}, func() error {
			return a.SRIOV.Bind(ctx, v.PCI, wantDrv)
		})
		if err != nil {
			return want, fmt.Errorf("binding to %s: %w", wantDrv, err)
		}
	case want != nil && wantDrv != "vfio-pci" && !a.vfSees(v.PCI, want, ib):
		// The VF's own device still shows its old address: the driver reads
		// it at probe, so rebind it.
		err := c.do(Change{PF: pf.addr, VF: v.Index, PCI: v.PCI, What: "rebind", To: wantDrv + " (to take " + want.String() + ")"}, func() error {
			return a.SRIOV.Bind(ctx, v.PCI, wantDrv)
		})
		if err != nil {
			return want, fmt.Errorf("rebinding to %s to take its new address: %w", wantDrv, err)
		}
	}
	return want, nil
}

// vfKernelDriver is the kernel driver of a VF whose PF has pfDriver and
// which is bound to vfDriver now ("" when unbound). A VF on a kernel driver
// keeps it. Otherwise: Mellanox and Broadcom VFs take their PF's driver,
// Intel's a VF driver of their own (found on QEMU's igb, whose VFs the
// kernel binds to igbvf: binding them to igb leaves them without a driver).
func vfKernelDriver(pfDriver, vfDriver string) string {
	if vfDriver != "" && vfDriver != "vfio-pci" {
		return vfDriver
	}
	switch pfDriver {
	case "igb":
		return "igbvf"
	case "ixgbe":
		return "ixgbevf"
	case "i40e", "ice":
		return "iavf"
	}
	return pfDriver
}

// vfSees reports whether a kernel-bound VF's own device shows want: its
// RDMA device's node GUID (InfiniBand) or its netdev's MAC (Ethernet).
func (a *Applier) vfSees(vf string, want net.HardwareAddr, ib bool) bool {
	if ib {
		r, _ := a.FS.RDMADevices(vf)
		if len(r) == 0 {
			return false
		}
		g, err := a.FS.NodeGUID(r[0])
		return err == nil && bytes.Equal(g[:], want)
	}
	n, _ := a.FS.Netdevs(vf)
	if len(n) == 0 {
		return false
	}
	mac, err := a.FS.NetdevAddress(n[0])
	return err == nil && strings.EqualFold(mac, want.String())
}

func addrString(a net.HardwareAddr) string {
	if a == nil {
		return "unknown"
	}
	return a.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
