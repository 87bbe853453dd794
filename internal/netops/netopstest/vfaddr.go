package netopstest

import (
	"context"
	"fmt"
	"net"

	"github.com/railyard-io/railyard/internal/netops"
)

// SetVFMAC implements netops.Ops.
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
	if f.macs == nil {
		f.macs = map[string]map[int]string{}
	}
	if f.macs[pf] == nil {
		f.macs[pf] = map[int]string{}
	}
	f.macs[pf][vf] = mac.String()
	return nil
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
}

// SetVFMAC implements netops.Ops.
func (f *Failing) SetVFMAC(ctx context.Context, pf string, vf int, mac net.HardwareAddr) error {
	if err := f.step("SetVFMAC(%s, %d)", pf, vf); err != nil {
		return err
	}
	return f.Ops.SetVFMAC(ctx, pf, vf, mac)
}
