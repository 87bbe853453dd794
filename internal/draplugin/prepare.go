package draplugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/dra"
)

// ErrClaim is wrapped by the per-claim errors of a claim that cannot be
// prepared (not allocated, a device this node does not publish, a device
// another claim holds).
var ErrClaim = errors.New("claim cannot be prepared")

// PrepareResourceClaims prepares each claim's devices of this driver
// (devices of other drivers are not its business): checkpoint, then the
// claim's CDI spec, then the CDI device IDs. A claim prepared before
// (same UID) gets the same answer again. A claim that cannot be prepared
// gets its own error; the others are prepared.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	start, failed := time.Now(), false
	d.mu.Lock()
	defer func() { d.mu.Unlock(); d.observe("prepare", start, failed) }()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		if c == nil {
			continue
		}
		pc, err := d.prepareLocked(c)
		if err != nil {
			out[c.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)}
			failed = true
			continue
		}
		out[c.UID] = kubeletplugin.PrepareResult{Devices: resultDevices(pc)}
	}
	return out, nil
}

func resultDevices(pc *preparedClaim) []kubeletplugin.Device {
	devs := make([]kubeletplugin.Device, 0, len(pc.Devices))
	for _, pd := range pc.Devices {
		devs = append(devs, resultDevice(pd, nil))
	}
	return devs
}

func (d *Driver) prepareLocked(c *resourceapi.ResourceClaim) (*preparedClaim, error) {
	if !validUID(string(c.UID)) {
		return nil, fmt.Errorf("%w: invalid UID %q", ErrClaim, c.UID)
	}
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("%w: not allocated", ErrClaim)
	}
	if d.topo == nil {
		return nil, fmt.Errorf("%w: %w", ErrClaim, ErrNotReady)
	}
	pc := &preparedClaim{Namespace: c.Namespace, Name: c.Name, UID: c.UID, Pods: reservedPods(c)}
	var errs []error
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != dra.DriverName {
			continue
		}
		pd, err := d.deviceLocked(c.UID, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pc.Devices = append(pc.Devices, pd)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClaim, err)
	}
	if err := oneShareEach(pc.Devices); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClaim, err)
	}
	railOrder(pc.Devices)
	if len(pc.Devices) == 0 {
		return pc, nil // nothing of this driver's: nothing to hold or inject
	}
	if old, ok := d.claims[c.UID]; ok && !sameDevices(old, pc) {
		return nil, fmt.Errorf("%w: prepared before with other devices (%s)", ErrClaim, strings.Join(pcis(old), ", "))
	}
	spec, err := renderSpec(d.cfg.DevRoot, d.cfg.NCCL, pc)
	if err != nil {
		return nil, err
	}
	// The checkpoint first: a device is never in a container's reach
	// without a record that Unprepare (after a restart too) finds.
	if old, ok := d.claims[c.UID]; !ok {
		d.claims[c.UID] = pc
		if err := d.saveCheckpointLocked(); err != nil {
			delete(d.claims, c.UID)
			return nil, err
		}
	} else if !slices.Equal(old.Pods, pc.Pods) {
		// Prepared again (a kubelet retry) with other pods reserved.
		before := old.Pods
		old.Pods = pc.Pods
		if err := d.saveCheckpointLocked(); err != nil {
			old.Pods = before
			return nil, err
		}
	}
	// The DRA view before the spec and before Prepare returns: the kubelet
	// creates the pod's sandbox, whose CNI ADD reads it, only then. A
	// failed write keeps the record, as a failed spec write does.
	if err := d.publishViewLocked(); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(SpecPath(d.cfg.CDISpecDir, c.UID), spec, 0o644); err != nil {
		return nil, err
	}
	return d.claims[c.UID], nil
}

// deviceLocked resolves one allocation result to a published device of
// this node that no other claim holds.
func (d *Driver) deviceLocked(uid types.UID, r resourceapi.DeviceRequestAllocationResult) (preparedDevice, error) {
	pci, err := dra.PCIAddress(r.Device)
	if err != nil {
		return preparedDevice{}, fmt.Errorf("device %q of pool %q: %w", r.Device, r.Pool, err)
	}
	pool, dev, ok := d.publishedLocked(r.Pool, r.Device)
	if !ok {
		return preparedDevice{}, fmt.Errorf("device %s (%s) of pool %q: %s", r.Device, pci, r.Pool, d.whyNotLocked(r.Pool, pci))
	}
	admin := r.AdminAccess != nil && *r.AdminAccess
	shared := pool.Kind == v1alpha1.KindShared && !admin
	var owner *preparedDevice // the claim holding it, for an admin-access request
	taken := map[int]bool{}   // share indexes other claims hold on it
	for other, oc := range d.claims {
		if other == uid {
			continue
		}
		for i, pd := range oc.Devices {
			switch {
			case pd.PCI != pci || pd.AdminAccess:
			case admin:
				owner = &oc.Devices[i]
			case shared && pd.Share != nil:
				taken[*pd.Share] = true
			default:
				return preparedDevice{}, fmt.Errorf("device %s (%s) is held by claim %s/%s (%s)", r.Device, pci, oc.Namespace, oc.Name, other)
			}
		}
	}
	pd := preparedDevice{
		Request: r.Request, Pool: r.Pool, Device: r.Device, PCI: pci, Resource: pool.Resource,
		Rail: -1, PF: pci, CDIDevice: CDIKind + "=" + cdiName(uid, r.Device), Published: dev, AdminAccess: admin,
	}
	held, wasHeld := d.heldLocked(uid, pci) // prepared before by this claim
	if shared {
		if r.ShareID == nil {
			return preparedDevice{}, fmt.Errorf("device %s (%s) of shared pool %s: the allocation has no share ID (a scheduler without consumable capacity?)", r.Device, pci, r.Pool)
		}
		id := *r.ShareID
		pd.ShareID, pd.Share = &id, held.Share
		if pd.Share == nil {
			k, err := freeShare(taken, pool.Shares)
			if err != nil {
				return preparedDevice{}, fmt.Errorf("device %s (%s) of shared pool %s: %w", r.Device, pci, r.Pool, err)
			}
			pd.Share = &k
		}
	}
	if a, ok := dev.Attributes[dra.AttrRail]; ok && a.IntValue != nil {
		pd.Rail = int(*a.IntValue)
	}
	if a, ok := dev.Attributes[dra.AttrPFPCIAddress]; ok && a.StringValue != nil {
		pd.PF = *a.StringValue
	}
	if wasHeld {
		// Prepared before by this claim: its RDMA device may be out of
		// the host's view now; what was found then still holds.
		pd.RDMA, pd.Nodes = held.RDMA, held.Nodes
		return pd, nil
	}
	if owner != nil {
		// Looking at a device another claim holds: its RDMA device may be
		// in that pod's namespace; the owner's record says which it is.
		pd.RDMA, pd.Nodes = owner.RDMA, owner.Nodes
		return pd, nil
	}
	var uverbs, umad, issm string
	if vf, _, ok := d.topo.VF(pci); ok {
		pd.RDMA, uverbs, umad, issm = vf.RDMA, vf.Uverbs, vf.UMAD, vf.ISSM
	} else if nic, ok := d.topo.NIC(pci); ok {
		pd.RDMA, uverbs, umad, issm = nic.RDMA, nic.Uverbs, nic.UMAD, nic.ISSM
	}
	if uverbs == "" {
		return preparedDevice{}, fmt.Errorf("device %s (%s): no verbs char device on the node", r.Device, pci)
	}
	dn := d.poolCfg[pool.Resource].DeviceNodes
	pd.Nodes = containerdev.NewOptions(dn.RDMACM, dn.UMAD, dn.ISSM).Nodes(uverbs, umad, issm)
	return pd, nil
}

// publishedLocked finds a device in the pools last built.
func (d *Driver) publishedLocked(pool, name string) (dra.Pool, resourceapi.Device, bool) {
	for _, p := range d.pools {
		if p.Name != pool {
			continue
		}
		for _, dev := range p.Devices {
			if dev.Name == name {
				return p, dev, true
			}
		}
	}
	return dra.Pool{}, resourceapi.Device{}, false
}

// whyNotLocked says why a device is not published: unhealthy (the
// reason), of another pool, or unknown here.
func (d *Driver) whyNotLocked(pool, pci string) string {
	known := false
	for _, p := range d.pools {
		if p.Name == pool {
			known = true
		}
		for _, u := range p.Unpublished {
			if u.PCI == pci {
				return "not published: " + u.Reason
			}
		}
	}
	if !known {
		return "no such pool on node " + d.cfg.NodeName
	}
	return "not published on node " + d.cfg.NodeName + " (removed, or of another pool)"
}

// freeShare is the share index a claim gets on a shared NIC it did not
// hold before: the lowest that no other claim holds.
func freeShare(taken map[int]bool, shares int) (int, error) {
	for k := range shares {
		if !taken[k] {
			return k, nil
		}
	}
	return 0, fmt.Errorf("all %d shares are held by other claims", shares)
}

// oneShareEach refuses a claim holding two shares of one NIC (two
// requests allocated the same multi-allocatable device): its container
// would get the NIC once where it asked for two. A distinctAttribute
// constraint keeps the scheduler from doing it.
func oneShareEach(devs []preparedDevice) error {
	seen := map[string]string{}
	for _, pd := range devs {
		if pd.Share == nil {
			continue
		}
		if first, dup := seen[pd.PCI]; dup {
			return fmt.Errorf("requests %s and %s got two shares of one NIC, %s (%s): a pod gets a NIC once; add a constraint {requests: [%s, %s], distinctAttribute: %s} to the claim, or ask one request for capacity %s: 2",
				first, pd.Request, pd.Device, pd.PCI, first, pd.Request, dra.AttrPCIBusID, dra.CapacityShares)
		}
		seen[pd.PCI] = pd.Request
	}
	return nil
}

func (d *Driver) heldLocked(uid types.UID, pci string) (preparedDevice, bool) {
	if c, ok := d.claims[uid]; ok {
		for _, pd := range c.Devices {
			if pd.PCI == pci {
				return pd, true
			}
		}
	}
	return preparedDevice{}, false
}

// preparedLocked is dra.Options.Prepared: every held device as published.
func (d *Driver) preparedLocked() map[string]resourceapi.Device {
	out := map[string]resourceapi.Device{}
	for _, c := range d.claims {
		for _, pd := range c.Devices {
			out[pd.PCI] = pd.Published
		}
	}
	return out
}

// UnprepareResourceClaims removes each claim's CDI spec, then its record.
// A claim this driver does not know (never prepared, or unprepared
// before) is a success.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	start, failed := time.Now(), false
	d.mu.Lock()
	defer func() { d.mu.Unlock(); d.observe("unprepare", start, failed) }()
	out := make(map[types.UID]error, len(claims))
	gone := false
	for _, c := range claims {
		held, known := d.claims[c.UID]
		out[c.UID] = d.unprepareLocked(c.UID)
		failed = failed || out[c.UID] != nil
		if known && out[c.UID] == nil && d.topo != nil {
			for _, pd := range held.Devices {
				gone = gone || !d.topo.Listed(pd.PCI)
			}
		}
	}
	// A released device that is gone from the node was published only
	// for the claim (NoExecute-tainted, dra.GoneReason): take it out of
	// the slices now rather than at the next rediscovery.
	if gone {
		if _, err := d.rebuildLocked(ctx, d.topo, d.leaves); err != nil {
			// The claims are released; the next rediscovery publishes again.
			d.lastErr = fmt.Errorf("republishing the slices without a released device that is gone: %w", err)
		}
	}
	return out, nil
}

func (d *Driver) unprepareLocked(uid types.UID) error {
	if !validUID(string(uid)) {
		return nil // never prepared: Prepare refuses such UIDs
	}
	if err := atomicfile.Remove(SpecPath(d.cfg.CDISpecDir, uid)); err != nil {
		return err
	}
	old, ok := d.claims[uid]
	if !ok {
		return d.publishViewLocked() // a retry after the view's write failed
	}
	delete(d.claims, uid)
	if err := d.saveCheckpointLocked(); err != nil {
		d.claims[uid] = old
		return err
	}
	return d.publishViewLocked()
}

// railOrder sorts a claim's devices the way NCCL_IB_HCA lists them
// (containerdev.Compare: rail index, none last, PF, device address), then
// by request.
func railOrder(ds []preparedDevice) {
	slices.SortFunc(ds, func(a, b preparedDevice) int {
		return cmp.Or(containerdev.Compare(a.containerDevice(), b.containerDevice()), strings.Compare(a.Request, b.Request))
	})
}

// containerDevice is what the container gets for pd, with the leaf its
// port is cabled to as published (dra.AttrLeaf).
func (pd preparedDevice) containerDevice() containerdev.Device {
	d := containerdev.Device{Resource: pd.Resource, PCI: pd.PCI, PF: pd.PF, Rail: pd.Rail, RDMA: pd.RDMA, Nodes: pd.Nodes}
	if a, ok := pd.Published.Attributes[dra.AttrLeaf]; ok && a.StringValue != nil {
		d.Leaf = *a.StringValue
	}
	return d
}

func sameDevices(a, b *preparedClaim) bool {
	return slices.Equal(pcis(a), pcis(b))
}

func pcis(c *preparedClaim) []string {
	out := make([]string, len(c.Devices))
	for i, pd := range c.Devices {
		out[i] = pd.PCI
	}
	return out
}

// resultDevice is pd as the kubelet plugin helper hands it to kubelet,
// with its metadata (nd: its interface in the pod, once known).
func resultDevice(pd preparedDevice, nd *resourceapi.NetworkDeviceData) kubeletplugin.Device {
	return kubeletplugin.Device{
		Requests: []string{pd.Request}, PoolName: pd.Pool, DeviceName: pd.Device, ShareID: pd.ShareID,
		CDIDeviceIDs: []string{pd.CDIDevice}, Metadata: deviceMetadata(pd, nd),
	}
}

// deviceMetadata is what the workload reads of a device in its KEP-5304
// metadata file: the attributes it was published with (RDMA device, link
// layer, rail, PCI address, pcieRoot, ...) and, once railyard-cni attached
// it, its interface in the pod (nd).
func deviceMetadata(pd preparedDevice, nd *resourceapi.NetworkDeviceData) *kubeletplugin.DeviceMetadata {
	m := &kubeletplugin.DeviceMetadata{Attributes: make(map[string]resourceapi.DeviceAttribute, len(pd.Published.Attributes)), NetworkData: nd}
	for k, v := range pd.Published.Attributes {
		m.Attributes[string(k)] = v
	}
	return m
}
