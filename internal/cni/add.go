package cni

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
)

// Add attaches the configured device to the namespace a.Netns as a.IfName.
// On any failure every earlier change is undone and no record is left.
func (p *Plugin) Add(ctx context.Context, a Args) (*current.Result, error) {
	s, err := p.open(a)
	if err != nil {
		return nil, err
	}
	if err := config.ValidIfName(a.IfName); err != nil {
		return nil, withCode(types.ErrInvalidEnvironmentVariables, fmt.Errorf("CNI_IFNAME: %w", err))
	}
	if s.cfg.DeviceInfoFile != "" {
		if _, err := p.checkDeviceInfoPath(s.cfg.DeviceInfoFile, attachment{ContainerID: a.ContainerID, IfName: a.IfName}); err != nil {
			return nil, invalidf("CNIDeviceInfoFile: %w", err)
		}
	}
	if err := p.checkPodNetns(ctx, a.Netns); err != nil {
		return nil, withCode(types.ErrInvalidEnvironmentVariables, err)
	}
	if lateBinding(s) {
		err := p.bind(ctx, s, a)
		if errors.Is(err, errNothingToAttach) {
			// resourceName without Multus: this pod asked for no device
			// of the pool; it gets no interface from this network.
			return &current.Result{CNIVersion: current.ImplementedSpecVersion}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if err := p.deviceExists(ctx, s); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx, s.key)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := p.claim(ctx, s, a); err != nil {
		return nil, err
	}
	prepare, attach := p.prepare, p.attach
	if s.cfg.Share != "" {
		prepare, attach = p.prepareShare, p.attachShare
	}
	rec, err := prepare(ctx, s, a)
	if err != nil {
		return nil, err
	}
	// The record is in place before anything changes; its fsyncs run
	// while the kernel moves the device, and finish waits for them before
	// the first change a power loss does not undo (state.Store.Stage).
	durable, err := s.store.Stage(rec)
	if err != nil {
		return nil, err
	}
	go durable() //nolint:errcheck // its result is read by the calls below
	s.durable = durable
	s.ipam = p.startIPAM(ctx, s, a)
	res, err := attach(ctx, s, a, rec)
	if derr := durable(); err == nil && derr != nil {
		err = derr // not reached: finish waited for it
	}
	if err != nil && s.ipam != nil {
		_, _ = s.ipam.wait() // the rollback releases what it allocated
	}
	if err != nil {
		if kept, rerr := p.rollback(ctx, s, a, rec); rerr != nil {
			if kept {
				return nil, fmt.Errorf("%w; rollback incomplete, record kept for DEL/GC: %s", err, rerr.Error()) // the ADD's error keeps its CNI code
			}
			return nil, fmt.Errorf("%w; device restored, but: %s", err, rerr.Error())
		}
		return nil, err
	}
	if s.dra != nil {
		p.writeDRAStatus(s, a, res)
	}
	return res, nil
}

// checkPodNetns fails unless netns is a network namespace other than the
// host's, by identity: /proc/self/ns/net or a bind mount of the host's own
// namespace would rename the host's netdev in the host.
func (p *Plugin) checkPodNetns(ctx context.Context, netns string) error {
	ok, err := p.Ops.NetnsExists(ctx, netns)
	switch {
	case err != nil:
		return fmt.Errorf("CNI_NETNS %q: %w", netns, err)
	case !ok || netns == netops.Host:
		return fmt.Errorf("CNI_NETNS %q is not a network namespace", netns)
	}
	same, err := p.Ops.SameNetns(ctx, netns, netops.Host)
	switch {
	case err != nil:
		return fmt.Errorf("CNI_NETNS %q: comparing with the host's network namespace: %w", netns, err)
	case same:
		return fmt.Errorf("CNI_NETNS %q is the host's own network namespace, not a pod's", netns)
	}
	return nil
}

// deviceExists fails before any lock file is created when the configured
// device does not exist: a PCI function must be in sysfs (whatever
// namespace its netdev is in), a netdev named by device must be on the host
// or held by a record.
func (p *Plugin) deviceExists(ctx context.Context, s *session) error {
	if s.cfg.DeviceID != "" {
		if _, err := s.fs.PCIDeviceDir(s.cfg.DeviceID); err != nil {
			return invalidf("deviceID: %w", err)
		}
		return nil
	}
	if _, err := s.store.Get(s.key); err == nil {
		return nil
	}
	if _, err := p.Ops.Link(ctx, netops.Host, s.cfg.Device); err != nil {
		if errors.Is(err, netops.ErrLinkNotFound) {
			return invalidf("device: %s is not in the host namespace: %w", s.cfg.Device, err)
		}
		return err
	}
	return nil
}

// claim fails when the device is attached to someone; a record from a
// previous boot is stale and is torn down first.
func (p *Plugin) claim(ctx context.Context, s *session, a Args) error {
	old, err := s.store.Get(s.key)
	if errors.Is(err, state.ErrNoRecord) {
		return nil
	}
	if errors.Is(err, state.ErrCorrupt) {
		return p.repairCorrupt(ctx, s, err)
	}
	if err != nil {
		return err
	}
	if old.BootID != p.BootID {
		if err := p.teardown(ctx, s.fs, old); err != nil {
			return withCode(types.ErrTryAgainLater, fmt.Errorf("device %s: releasing attachment left from a previous boot: %w", s.key, err))
		}
		_ = p.releaseIPAM(ctx, old)
		if err := p.removeDeviceInfo(old.DeviceInfoFile, recAttachment(old)); err != nil {
			return err
		}
		return s.store.Delete(old.Key)
	}
	who := "container " + old.ContainerID + " interface " + old.IfName
	if old.ContainerID == a.ContainerID && old.IfName == a.IfName {
		who = "this container already"
	}
	return withCode(types.ErrTryAgainLater, fmt.Errorf("device %s is attached to %s (%s); try again later", s.key, who, old.Phase))
}

// repairCorrupt handles a record of the device that does not decode (cut
// by a crash of an older version, a damaged disk): stale when the device is
// free on the host, so it is removed and ADD goes on; otherwise ADD is
// refused with the way out.
func (p *Plugin) repairCorrupt(ctx context.Context, s *session, cause error) error {
	free, err := p.freeOnHost(ctx, s, s.key)
	if err != nil {
		return err
	}
	if !free {
		return withCode(types.ErrTryAgainLater, fmt.Errorf("device %s is not free on the host and its record does not decode (%w): DEL the pod that holds it (DEL finds its interface by the alias marker), or, once no pod uses the device, remove %s", s.key, cause, s.store.RecordPath(s.key)))
	}
	p.warn("removing a record that does not decode (stale: the device is free on the host)", "device", s.key, "error", cause)
	return s.store.Delete(s.key)
}

// prepare finds the device and snapshots what ADD will change.
func (p *Plugin) prepare(ctx context.Context, s *session, a Args) (*state.Record, error) {
	cfg := s.cfg
	rec := &state.Record{
		Key: s.key, Network: cfg.Name, ContainerID: a.ContainerID, IfName: a.IfName,
		Netns: a.Netns, BootID: p.BootID, Phase: state.PhaseAdding,
		TempName:       tempName(s.key, a.ContainerID, a.IfName),
		DeviceInfoFile: cfg.DeviceInfoFile, Config: json.RawMessage(cfg.Raw),
	}
	name := cfg.Device
	if cfg.DeviceID != "" || s.key != "netdev-"+cfg.Device {
		rec.PCI = s.key
	}
	if cfg.DeviceID != "" {
		n, err := hostNetdev(s.fs, cfg.DeviceID)
		if err != nil {
			return nil, err
		}
		name = n
	}
	l, err := p.Ops.Link(ctx, netops.Host, name)
	if err != nil {
		if errors.Is(err, netops.ErrLinkNotFound) {
			return nil, invalidf("device: %s is not in the host namespace: %w", name, err)
		}
		return nil, err
	}
	rec.Orig, rec.OrigMAC = l, l.MAC.String()
	rec.Marker = deviceMarker(s.key, l)
	if rec.PCI != "" {
		pf, err := vfOf(s.fs, rec.PCI)
		if err != nil {
			return nil, err
		}
		if pf != nil {
			vf, err := p.Ops.VF(ctx, pf.Netdev, pf.VF)
			if err != nil {
				return nil, fmt.Errorf("reading VF settings through PF %s: %w", pf.Netdev, err)
			}
			rec.PF, rec.OrigVF = pf, &vf
			if len(l.MAC) == 6 {
				a, err := p.Ops.VFAddresses(ctx, pf.Netdev, pf.VF)
				if err != nil {
					return nil, fmt.Errorf("reading VF addresses through PF %s: %w", pf.Netdev, err)
				}
				rec.OrigVFMAC = a.MAC.String()
			}
		}
	}
	if cfg.VF.Any() && rec.PF == nil {
		return nil, invalidf("vlan/vlanQoS/vlanProto/spoofchk/trust/link_state/min_tx_rate/max_tx_rate/guid: device %s is not an SR-IOV VF", s.key)
	}
	if err := checkIB(cfg, rec); err != nil {
		return nil, err
	}
	if cfg.RDMA {
		if rec.PCI == "" {
			return nil, invalidf("rdma: device %s has no PCI address to find its RDMA device", name)
		}
		mode, err := p.Ops.RDMANetnsMode(ctx)
		if err != nil {
			return nil, withCode(types.ErrPluginNotAvailable, fmt.Errorf("rdma: %w", err))
		}
		if mode != "exclusive" {
			return nil, withCode(types.ErrPluginNotAvailable, fmt.Errorf("rdma: the RDMA subsystem is in %q netns mode; moving RDMA devices into pods needs \"exclusive\" (rdma system set netns exclusive, before other namespaces exist, or ib_core netns_mode=0)", mode))
		}
		dev, err := rdmaOf(s.fs, rec.PCI)
		if err != nil {
			return nil, err
		}
		rec.RDMA = dev
	}
	return rec, nil
}

// checkIB applies ib-sriov-cni's rules: with ibKubernetesEnabled, ADD
// waits for ib-kubernetes to mark the pod configured and a VF needs the
// GUID it assigned; a GUID is set only on an InfiniBand VF, whose IPoIB
// netdev address (20 bytes) ends with the GUID to restore on DEL.
func checkIB(cfg *config.Config, rec *state.Record) error {
	if cfg.IBKubernetes && cfg.IBKubernetesState != "configured" {
		return withCode(types.ErrTryAgainLater, fmt.Errorf("ibKubernetesEnabled: ib-kubernetes has not configured this pod yet (args.cni[\"mellanox.infiniband.app\"] = %q, want \"configured\"); is ib-kubernetes running?", cfg.IBKubernetesState))
	}
	if cfg.IBKubernetes && rec.PF != nil && cfg.VF.GUID == nil {
		return invalidf("ibKubernetesEnabled: no GUID for VF %s (ib-kubernetes passes it as runtimeConfig.infinibandGUID or args.cni.guid)", rec.Key)
	}
	if cfg.VF.GUID == nil {
		return nil
	}
	if len(rec.Orig.MAC) != 20 {
		return invalidf("guid: %s is not an InfiniBand VF (its netdev %s has a %d-byte address, not IPoIB's 20)", rec.Key, rec.Orig.Name, len(rec.Orig.MAC))
	}
	rec.OrigGUID = net.HardwareAddr(rec.Orig.MAC[12:]).String()
	return nil
}

// attach makes every change, in order. It returns at the first failure.
func (p *Plugin) attach(ctx context.Context, s *session, a Args, rec *state.Record) (*current.Result, error) {
	cfg, o := s.cfg, p.Ops
	if err := p.applyVF(ctx, cfg.VF, rec); err != nil {
		return nil, err
	}
	host, pod, name := netops.Host, a.Netns, rec.Orig.Name
	if rec.Orig.Up {
		if err := o.SetLinkUp(ctx, host, name, false); err != nil {
			return nil, err
		}
	}
	if err := o.SetAlias(ctx, host, name, rec.Marker); err != nil {
		return nil, err
	}
	// Altnames travel with the netdev and would collide in the pod (or
	// leave the host name reserved there); they are restored on the host.
	for _, alt := range rec.Orig.AltNames {
		if err := o.DelAltName(ctx, host, name, alt); err != nil {
			return nil, err
		}
	}
	if err := o.RenameLink(ctx, host, name, rec.TempName); err != nil {
		return nil, err
	}
	if err := o.MoveLink(ctx, host, rec.TempName, pod); err != nil {
		return nil, err
	}
	if rec.RDMA != "" {
		if err := o.MoveRDMA(ctx, host, rec.RDMA, pod); err != nil {
			return nil, fmt.Errorf("moving RDMA device %s into the pod: %w", rec.RDMA, err)
		}
	}
	if err := o.RenameLink(ctx, pod, rec.TempName, a.IfName); err != nil {
		return nil, err
	}
	return p.finish(ctx, s, a, rec, rec.Orig.MTU, rec.Orig.MAC)
}

// finish sets the pod interface's MTU and MAC (mtu and mac are what it has
// now), brings it up, runs IPAM, finds the RDMA device's RoCE GID index,
// writes the device-info file, marks the record attached (with the
// multi-rail routing table) and sets up multi-rail routing.
func (p *Plugin) finish(ctx context.Context, s *session, a Args, rec *state.Record, mtu int, mac net.HardwareAddr) (*current.Result, error) {
	cfg, o, pod := s.cfg, p.Ops, a.Netns
	if cfg.MTU != 0 && cfg.MTU != mtu {
		if err := o.SetMTU(ctx, pod, a.IfName, cfg.MTU); err != nil {
			return nil, err
		}
		mtu = cfg.MTU
	}
	if cfg.MAC != nil && cfg.MAC.String() != mac.String() {
		if err := o.SetMAC(ctx, pod, a.IfName, cfg.MAC); err != nil {
			return nil, err
		}
		mac = cfg.MAC
	}
	if err := o.SetLinkUp(ctx, pod, a.IfName, true); err != nil {
		return nil, err
	}
	res := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{{
			Name: a.IfName, Mac: mac.String(), Mtu: mtu, Sandbox: a.Netns, PciID: rec.PCI,
		}},
		DNS: cfg.DNS,
	}
	// Everything before this is kernel state, which a power loss resets;
	// the IPAM allocation, the device-info file and the records written
	// next outlive it, so the record must be on disk first.
	if err := s.recordDurable(); err != nil {
		return nil, err
	}
	if cfg.IPAMType != "" {
		if err := p.runIPAM(ctx, s, a, res); err != nil {
			return nil, err
		}
	}
	if err := p.chooseRailTable(ctx, s, a, rec, res); err != nil {
		return nil, err
	}
	p.recordGID(ctx, s, a, rec, res)
	if err := p.writeDeviceInfo(cfg.DeviceInfoFile, recAttachment(rec), rec); err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding result: %w", err)
	}
	// One write for the result and the multi-rail table, before the
	// table's first rule (a DEL after a crash finds it); a failure after
	// it rolls back as any other. It replaces the staged record, durable
	// since recordDurable, and a power loss that loses it loses nothing
	// (state.Store.Advance): no directory fsync.
	rec.Phase, rec.Result = state.PhaseAttached, b
	if err := s.store.Advance(rec); err != nil {
		return nil, err
	}
	if err := p.setupMultiRail(ctx, s, a, rec, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (p *Plugin) runIPAM(ctx context.Context, s *session, a Args, res *current.Result) error {
	var r types.Result
	var err error
	if s.ipam != nil {
		r, err = s.ipam.wait()
	} else {
		r, err = p.IPAM.Exec(ctx, "ADD", s.cfg.IPAMType, s.cfg.Raw, a)
	}
	if err != nil {
		return err
	}
	ir, err := current.NewResultFromResult(r)
	if err != nil {
		return fmt.Errorf("converting IPAM result: %w", err)
	}
	if len(ir.IPs) == 0 {
		return fmt.Errorf("IPAM plugin %s returned no IP addresses", s.cfg.IPAMType)
	}
	for _, ip := range ir.IPs {
		ip.Interface = current.Int(0)
	}
	res.IPs, res.Routes = ir.IPs, ir.Routes
	if len(s.cfg.DNS.Nameservers) == 0 && len(s.cfg.DNS.Search) == 0 {
		res.DNS = ir.DNS
	}
	return p.Ops.ConfigureIPs(ctx, a.Netns, a.IfName, res)
}

// rollback undoes a failed ADD: teardown, IPAM release, device-info file,
// then the record. kept reports whether the record is still there (the
// teardown did not finish, or the record could not be removed), for DEL or
// GC to finish.
func (p *Plugin) rollback(ctx context.Context, s *session, a Args, rec *state.Record) (kept bool, err error) {
	if err := p.teardown(ctx, s.fs, rec); err != nil {
		return true, err
	}
	var errs []error
	if s.cfg.IPAMType != "" {
		if _, err := p.IPAM.Exec(ctx, "DEL", s.cfg.IPAMType, s.cfg.Raw, a); err != nil {
			errs = append(errs, fmt.Errorf("releasing addresses: %w", err))
		}
	}
	if err := p.removeDeviceInfo(rec.DeviceInfoFile, recAttachment(rec)); err != nil {
		errs = append(errs, err)
	}
	if err := s.store.Delete(rec.Key); err != nil {
		return true, errors.Join(append(errs, err)...)
	}
	return false, errors.Join(errs...)
}
