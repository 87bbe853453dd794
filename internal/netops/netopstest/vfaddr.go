package netopstest

import (
	"context"
	"fmt"
	"net"
	"syscall"

	"github.com/railyard-io/railyard/internal/netops"
)

// SetVFMAC implements netops.Ops: an administrative MAC, or with all
// zeros none (the kernel's way to clear it, as `ip link set PF vf N mac
// 00:00:00:00:00:00`).
func (f *Fake) SetVFMAC(_ context.Context, pf string, vf int, mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("MAC %s of VF %d: want 6 bytes", mac, vf)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(true, "SetVFMAC(%s, %d, %s)", pf, vf, mac); err != nil {
		return err
	}
	if _, err := f.vf(pf, vf); err != nil {
		return err
	}
	r := vfRef{pf, vf}
	if f.adminMAC == nil {
		f.adminMAC = map[vfRef]bool{}
	}
	f.adminMAC[r] = !isZero(mac)
	f.putMAC(r, mac)
	return nil
}

func isZero(mac net.HardwareAddr) bool {
	for _, b := range mac {
		if b != 0 {
			return false
		}
	}
	return true
}

// VFAddresses implements netops.Ops: the MAC and GUID last set through the
// PF, all zeros for a VF that has none (what a new VF reports). Like the
// kernel, it reports the GUID as both node and port GUID (SetVFGUID sets
// both).
func (f *Fake) VFAddresses(_ context.Context, pf string, vf int) (netops.VFAddresses, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.record(false, "VFAddresses(%s, %d)", pf, vf)
	if _, err := f.vf(pf, vf); err != nil {
		return netops.VFAddresses{}, err
	}
	out := netops.VFAddresses{MAC: make(net.HardwareAddr, 6), NodeGUID: make(net.HardwareAddr, 8), PortGUID: make(net.HardwareAddr, 8)}
	if s := f.macs[pf][vf]; s != "" {
		out.MAC, _ = net.ParseMAC(s)
	}
	if s := f.guids[pf][vf]; s != "" {
		g, _ := net.ParseMAC(s)
		out.NodeGUID, out.PortGUID = g, append(net.HardwareAddr(nil), g...)
	}
	return out, nil
}

// RemoveVFs forgets every VF of pf with its settings and addresses, as
// the kernel does when sriov_numvfs goes to 0.
func (f *Fake) RemoveVFs(pf string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.vfs, pf)
	delete(f.guids, pf)
	delete(f.macs, pf)
	for r := range f.adminMAC {
		if r.pf == pf {
			delete(f.adminMAC, r)
		}
	}
	for i, r := range f.vfNetdevs {
		if r.pf == pf {
			delete(f.vfNetdevs, i)
		}
	}
}

// SetVFMAC implements netops.Ops.
func (f *Failing) SetVFMAC(ctx context.Context, pf string, vf int, mac net.HardwareAddr) error {
	if err := f.step("SetVFMAC(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFMAC(ctx, pf, vf, mac)
}

// SetVFNetdev says that the link with index ifindex is VF vf's own netdev.
// As with the kernel (seen on igb), the VF tells the PF its MAC while its
// netdev is up (a MAC set while up, or when brought up), and the PF then
// reports it, unless the PF has set one (an administrative MAC), which the
// VF cannot change while up. SetVFMAC with all zeros clears the
// administrative MAC; the PF reports all zeros until the VF tells it one.
func (f *Fake) SetVFNetdev(pf string, vf, ifindex int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vfNetdevs == nil {
		f.vfNetdevs = map[int]vfRef{}
	}
	f.vfNetdevs[ifindex] = vfRef{pf, vf}
}

type vfRef struct {
	pf string
	vf int
}

// vfSetsMAC is the VF's side of SetMAC on its netdev (f.mu held): while
// up, refused when the PF set an administrative MAC, else told to the PF.
// While down the netdev changes and the PF is not told.
func (f *Fake) vfSetsMAC(ifindex int, up bool, mac net.HardwareAddr) error {
	r, ok := f.vfNetdevs[ifindex]
	if !ok || !up {
		return nil
	}
	if f.adminMAC[r] {
		return fmt.Errorf("VF %d of %s has an administrative MAC: %w", r.vf, r.pf, syscall.EADDRNOTAVAIL)
	}
	f.putMAC(r, mac)
	return nil
}

// vfAnnouncesMAC is a VF netdev coming up (f.mu held): it tells the PF its
// MAC unless the PF set one.
func (f *Fake) vfAnnouncesMAC(ifindex int, mac net.HardwareAddr) {
	if r, ok := f.vfNetdevs[ifindex]; ok && !f.adminMAC[r] && len(mac) == 6 {
		f.putMAC(r, mac)
	}
}

func (f *Fake) putMAC(r vfRef, mac net.HardwareAddr) {
	if f.macs == nil {
		f.macs = map[string]map[int]string{}
	}
	if f.macs[r.pf] == nil {
		f.macs[r.pf] = map[int]string{}
	}
	f.macs[r.pf][r.vf] = mac.String()
}
