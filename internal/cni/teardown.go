package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// teardown converges the device of rec back to the host state rec recorded:
// RDMA device first, then the netdev (out of the pod, original name, MTU,
// MAC, altnames, alias, up state), then the VF settings through the PF. It
// looks at where things are instead of replaying a journal, so it finishes
// any partial ADD or DEL and is safe to repeat. A device that no longer
// exists (a virtual one destroyed with its namespace) is not an error.
func (p *Plugin) teardown(ctx context.Context, fs sysfs.FS, rec *state.Record) error {
	if rec.Kind == state.KindMacvlan {
		return p.teardownMacvlan(ctx, rec)
	}
	o := p.Ops
	podOK := false
	if rec.Netns != "" && rec.Netns != netops.Host {
		ok, err := o.NetnsExists(ctx, rec.Netns)
		if err != nil {
			return err
		}
		podOK = ok
	}
	if podOK {
		if err := p.removeRailRules(ctx, rec); err != nil {
			return err
		}
	}
	if podOK && rec.RDMA != "" {
		in, err := o.RDMADeviceIn(ctx, rec.Netns, rec.RDMA)
		if err != nil {
			return err
		}
		if in {
			if err := o.MoveRDMA(ctx, rec.Netns, rec.RDMA, netops.Host); err != nil {
				return fmt.Errorf("moving RDMA device %s back to the host: %w", rec.RDMA, err)
			}
		}
	}
	if podOK {
		if err := p.leavePod(ctx, rec); err != nil {
			return err
		}
	}
	l, found, err := p.findOnHost(ctx, fs, rec)
	if err != nil {
		return err
	}
	if !found && !podOK && awaitRefund(ctx, fs, rec.PCI) {
		if l, found, err = p.findOnHost(ctx, fs, rec); err != nil {
			return err
		}
	}
	if found {
		if err := p.restoreHost(ctx, rec, l); err != nil {
			return err
		}
	}
	return p.restoreVF(ctx, rec)
}

// refundWait bounds how long DEL waits for the kernel to return a
// physical netdev from a namespace that was deleted before DEL.
const refundWait = 10 * time.Second

// awaitRefund waits until the PCI function pci has a netdev on the host
// again, and reports whether it has. A deleted namespace is destroyed
// asynchronously once its last reference goes, and only then does the
// kernel return a VF's netdev to the host: in the VM of make vmtest the
// netdev was still away when DEL ran right after `ip netns del`, and DEL
// left it under its pod name. It returns at once when the function is
// gone, has no driver, or already has a host netdev.
func awaitRefund(ctx context.Context, fs sysfs.FS, pci string) bool {
	if pci == "" {
		return false
	}
	deadline := time.Now().Add(refundWait)
	for {
		if drv, err := fs.Driver(pci); err != nil || drv == "" {
			return false
		}
		if n, err := fs.Netdevs(pci); err == nil && len(n) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leavePod moves the netdev, if it is in the pod, to the host under its
// temporary name.
func (p *Plugin) leavePod(ctx context.Context, rec *state.Record) error {
	o, pod := p.Ops, rec.Netns
	var l netops.Link
	found := false
	for _, name := range []string{rec.IfName, rec.TempName} {
		got, err := o.Link(ctx, pod, name)
		if errors.Is(err, netops.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if got.Alias == rec.Marker {
			l, found = got, true
			break
		}
	}
	if !found {
		return nil
	}
	if l.Up {
		if err := o.SetLinkUp(ctx, pod, l.Name, false); err != nil {
			return err
		}
	}
	if l.Name != rec.TempName {
		if err := o.RenameLink(ctx, pod, l.Name, rec.TempName); err != nil {
			return err
		}
	}
	return o.MoveLink(ctx, pod, rec.TempName, netops.Host)
}

// findOnHost finds the recorded netdev in the host namespace: under its
// temporary name, through sysfs by PCI address or under its original name
// (each accepted when it carries the marker or the original index), else by
// the alias marker among all links (a device the kernel refunded as "devN").
func (p *Plugin) findOnHost(ctx context.Context, fs sysfs.FS, rec *state.Record) (netops.Link, bool, error) {
	o, host := p.Ops, netops.Host
	names := []string{rec.TempName}
	if rec.PCI != "" {
		if n, err := fs.Netdevs(rec.PCI); err == nil {
			names = append(names, n...)
		}
	}
	names = append(names, rec.Orig.Name)
	for _, name := range names {
		l, err := o.Link(ctx, host, name)
		if errors.Is(err, netops.ErrLinkNotFound) {
			continue
		}
		if err != nil {
			return netops.Link{}, false, err
		}
		if l.Alias == rec.Marker || name == rec.TempName || l.Index == rec.Orig.Index {
			return l, true, nil
		}
	}
	l, err := o.LinkByAlias(ctx, host, rec.Marker)
	if err == nil {
		return l, true, nil
	}
	if errors.Is(err, netops.ErrLinkNotFound) {
		return netops.Link{}, false, nil
	}
	return netops.Link{}, false, err
}

// restoreHost puts a host netdev back to its recorded settings.
func (p *Plugin) restoreHost(ctx context.Context, rec *state.Record, l netops.Link) error {
	o, host, want := p.Ops, netops.Host, rec.Orig
	name := l.Name
	if name != want.Name {
		if l.Up {
			if err := o.SetLinkUp(ctx, host, name, false); err != nil {
				return err
			}
			l.Up = false
		}
		if err := o.RenameLink(ctx, host, name, want.Name); err != nil {
			return fmt.Errorf("restoring the name of %s: %w", want.Name, err)
		}
		name = want.Name
	}
	if want.MTU != 0 && l.MTU != want.MTU {
		if err := o.SetMTU(ctx, host, name, want.MTU); err != nil {
			return err
		}
	}
	if rec.OrigMAC != "" && l.MAC.String() != rec.OrigMAC {
		mac, err := net.ParseMAC(rec.OrigMAC)
		if err != nil {
			return fmt.Errorf("record of %s: original MAC %q: %w", rec.Key, rec.OrigMAC, err)
		}
		if err := o.SetMAC(ctx, host, name, mac); err != nil {
			return err
		}
	}
	for _, alt := range want.AltNames {
		if !slices.Contains(l.AltNames, alt) {
			if err := o.AddAltName(ctx, host, name, alt); err != nil {
				return err
			}
		}
	}
	if l.Alias != want.Alias {
		if err := o.SetAlias(ctx, host, name, want.Alias); err != nil {
			return err
		}
	}
	if want.Up != l.Up {
		return o.SetLinkUp(ctx, host, name, want.Up)
	}
	return nil
}

// releaseIPAM releases a record's addresses with the configuration it was
// attached with (best effort; the runtime's own DEL retries it).
func (p *Plugin) releaseIPAM(ctx context.Context, rec *state.Record) error {
	_, err := p.ipam(ctx, "DEL", rec.Config, Args{ContainerID: rec.ContainerID, Netns: rec.Netns, IfName: rec.IfName, Config: rec.Config})
	return err
}
