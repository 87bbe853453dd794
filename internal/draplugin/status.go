package draplugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draview"
)

// statusPoll is how often the driver reads railyard-cni's status records.
const statusPoll = time.Second

// Condition of a device railyard-cni attached.
const (
	ConditionReady = "Ready"
	reasonAttached = "NetdevAttached"
)

// SyncStatus makes each prepared claim's status.devices entries of this
// driver say what railyard-cni did with its devices (KEP-4817): for each
// device with a status record, its interface in the pod, IPs and MAC
// (networkData) and condition Ready; a device without one (not attached,
// or detached by DEL) has no entry. Entries of other drivers are kept.
// Records of claims the driver does not hold (left by a DEL that ran
// after Unprepare) are removed. One pass; errors are joined, and what
// failed is tried again at the next pass.
func (d *Driver) SyncStatus(ctx context.Context, c kubernetes.Interface) error {
	if d.cfg.ViewDir == "" {
		return nil
	}
	records, rerr := draview.ReadStatuses(d.cfg.ViewDir)
	type want struct {
		ns, name string
		devices  []preparedDevice
		entries  []resourceapi.AllocatedDeviceStatus
		network  map[string]*resourceapi.NetworkDeviceData // by PCI address
	}
	d.mu.Lock()
	wants := make(map[types.UID]want, len(d.claims))
	byPCI := map[types.UID]map[string]preparedDevice{}
	for uid, pc := range d.claims {
		wants[uid] = want{ns: pc.Namespace, name: pc.Name, devices: pc.Devices, network: map[string]*resourceapi.NetworkDeviceData{}}
		byPCI[uid] = map[string]preparedDevice{}
		for _, pd := range pc.Devices {
			byPCI[uid][pd.PCI] = pd
		}
	}
	meta := d.meta
	d.mu.Unlock()
	errs := []error{rerr}
	for _, r := range records {
		uid := types.UID(r.ClaimUID)
		pd, ok := byPCI[uid][r.PCI]
		if !ok {
			if err := draview.RemoveStatus(d.cfg.ViewDir, r.ContainerID, r.IfName); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		w := wants[uid]
		e := deviceStatus(pd, r)
		w.entries = append(w.entries, e)
		w.network[pd.PCI] = e.NetworkData
		wants[uid] = w
	}
	for uid, w := range wants {
		slices.SortFunc(w.entries, func(a, b resourceapi.AllocatedDeviceStatus) int {
			return strings.Compare(a.Pool+"/"+a.Device, b.Pool+"/"+b.Device)
		})
		key := statusKey(w.entries)
		if applied, known := d.appliedStatus(uid); known && applied == key {
			continue // unknown (a new claim, an agent restart): read the claim once
		}
		if meta != nil {
			errs = append(errs, updateMetadata(ctx, meta, uid, w.ns, w.name, w.devices, w.network))
		}
		if err := d.writeStatus(ctx, c, uid, w.ns, w.name, w.entries, key); err != nil {
			errs = append(errs, err)
		}
	}
	d.mu.Lock()
	for uid := range d.applied {
		if _, ok := d.claims[uid]; !ok {
			delete(d.applied, uid)
		}
	}
	d.mu.Unlock()
	return errors.Join(errs...)
}

// appliedStatus is what the claim's entries were last found or written
// to be; false when not known since the driver started.
func (d *Driver) appliedStatus(uid types.UID) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key, ok := d.applied[uid]
	return key, ok
}

// writeStatus replaces the claim's entries of this driver with entries,
// unless the claim already has them.
func (d *Driver) writeStatus(ctx context.Context, c kubernetes.Interface, uid types.UID, ns, name string, entries []resourceapi.AllocatedDeviceStatus, key string) error {
	claim, err := c.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // deleted: Unprepare follows
	case err != nil:
		return fmt.Errorf("claim %s/%s: reading its status: %w", ns, name, err)
	case claim.UID != uid:
		return nil // another claim of that name
	}
	var others, ours []resourceapi.AllocatedDeviceStatus
	for _, s := range claim.Status.Devices {
		if s.Driver == dra.DriverName {
			ours = append(ours, s)
		} else {
			others = append(others, s)
		}
	}
	if statusKey(ours) != key {
		claim.Status.Devices = append(others, entries...)
		if _, err := c.ResourceV1().ResourceClaims(ns).UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: "railyard-agent"}); err != nil {
			return fmt.Errorf("claim %s/%s: writing its device status: %w", ns, name, err)
		}
	}
	d.mu.Lock()
	if _, held := d.claims[uid]; held {
		d.applied[uid] = key
	}
	d.mu.Unlock()
	return nil
}

// deviceStatus is the entry of a device railyard-cni attached.
func deviceStatus(pd preparedDevice, r draview.DeviceStatus) resourceapi.AllocatedDeviceStatus {
	return resourceapi.AllocatedDeviceStatus{
		Driver: dra.DriverName, Pool: pd.Pool, Device: pd.Device, ShareID: (*string)(pd.ShareID),
		NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: r.IfName, IPs: r.IPs, HardwareAddress: r.MAC},
		Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: reasonAttached,
			Message:            fmt.Sprintf("railyard-cni attached %s (%s) to sandbox %s as %s", pd.PCI, pd.RDMA, shortID(r.ContainerID), r.IfName),
			LastTransitionTime: metav1.Now()}},
	}
}

// statusKey is what entries say, without times: equal keys need no write.
func statusKey(entries []resourceapi.AllocatedDeviceStatus) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s|%s|%s|", e.Driver, e.Pool, e.Device)
		if e.ShareID != nil {
			fmt.Fprintf(&b, "%s|", *e.ShareID)
		}
		if n := e.NetworkData; n != nil {
			fmt.Fprintf(&b, "%s|%s|%s|", n.InterfaceName, strings.Join(n.IPs, ","), n.HardwareAddress)
		}
		for _, c := range e.Conditions {
			fmt.Fprintf(&b, "%s=%s:%s:%s|", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func shortID(id string) string { return id[:min(len(id), 12)] }

// runStatus runs SyncStatus every statusPoll until ctx ends, logging an
// error when it differs from the last one logged.
func (d *Driver) runStatus(ctx context.Context, c kubernetes.Interface, log logr.Logger) {
	t := time.NewTicker(statusPoll)
	defer t.Stop()
	last := ""
	for {
		err := d.SyncStatus(ctx, c)
		if msg := fmt.Sprint(err); err != nil && msg != last {
			log.Error(err, "claim device status (networkData) not written; retrying")
			last = msg
		} else if err == nil {
			last = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// updateMetadata rewrites the metadata file of each of the claim's
// requests with its devices' interfaces in the pod (KEP-5304). A container
// created before the rewrite keeps the file it was given (a bind mount of
// the earlier file): the interface reaches containers created after it.
func updateMetadata(ctx context.Context, meta MetadataUpdater, uid types.UID, ns, name string, devs []preparedDevice, network map[string]*resourceapi.NetworkDeviceData) error {
	byRequest := map[string][]kubeletplugin.Device{}
	var order []string
	for _, pd := range devs {
		if _, ok := byRequest[pd.Request]; !ok {
			order = append(order, pd.Request)
		}
		byRequest[pd.Request] = append(byRequest[pd.Request], resultDevice(pd, network[pd.PCI]))
	}
	var errs []error
	for _, r := range order {
		if err := meta.UpdateRequestMetadata(ctx, ns, name, uid, r, byRequest[r]); err != nil {
			errs = append(errs, fmt.Errorf("claim %s/%s request %s: updating its metadata file: %w", ns, name, r, err))
		}
	}
	return errors.Join(errs...)
}
