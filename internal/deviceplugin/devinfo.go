package deviceplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/railyard-io/railyard/internal/atomicfile"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

// A pool that allocates devices writes each allocated device's Multus
// device-info file (<DevInfoDir>/<resource>-<id>-device.json) in Allocate.
// Multus reads it at the pod's CNI ADD, and again whenever the pod's
// sandbox is made anew, so it must stay while kubelet holds the device,
// and no longer: the plugin keeps exactly the files of the devices
// PodResources lists for the pool (Config.Holders), comparing every
// devInfoResync, and removes all of its files when it stops (helm
// uninstall leaves none; a restarted agent writes back those of devices
// kubelet still holds at its first comparison). A sandbox pool's files
// are the binding store's (internal/binding), never touched here.

// devInfoGrace is how long after its latest Allocate a device's file is
// kept although PodResources does not list the device: kubelet records a
// container's devices only once Allocate has returned, so a list taken
// meanwhile misses them.
const devInfoGrace = time.Minute

// devInfoResync is how often Run compares the files with PodResources.
const devInfoResync = time.Minute

// devInfoMax bounds reading a device-info file back (a document is about
// 150 bytes).
const devInfoMax = 4 << 10

// listTimeout bounds one PodResources list.
const listTimeout = 10 * time.Second

// devInfoFiles is what the plugin knows of its device-info files.
type devInfoFiles struct {
	mu sync.Mutex
	// allocated is each device's latest Allocate in this process.
	allocated map[string]time.Time
	// closed: the files were removed at shutdown; Allocate writes none.
	closed bool
}

// keepsDevInfo says whether the plugin writes device-info files itself.
func (p *Plugin) keepsDevInfo() bool { return p.cfg.DevInfoDir != "" && p.cfg.Binder == nil }

// writeDevInfo writes d's device-info file for Allocate.
func (p *Plugin) writeDevInfo(d Device) error {
	if !p.keepsDevInfo() {
		return nil
	}
	p.devInfo.mu.Lock()
	defer p.devInfo.mu.Unlock()
	if p.devInfo.closed {
		return errors.New("the device plugin is stopping")
	}
	p.devInfo.allocated[d.ID] = p.cfg.Now()
	return p.writeDevInfoLocked(d)
}

// writeDevInfoLocked writes d's file atomically, unless it already holds
// the right document (the same device given again).
func (p *Plugin) writeDevInfoLocked(d Device) error {
	cd := p.containerDevice(d, nil)
	doc, err := containerdev.NewDevInfo(cd.PCI, cd.PF, cd.RDMA)
	if err != nil {
		return err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("device info: %w", err)
	}
	path := containerdev.DevInfoPath(p.cfg.DevInfoDir, p.cfg.Resource, d.ID)
	if old, err := inputfile.Read(path, devInfoMax); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := atomicfile.WriteFile(path, b, 0o444); err != nil {
		return fmt.Errorf("device info file: %w", err)
	}
	return nil
}

// devInfoOnDisk are the device IDs of the pool's files in DevInfoDir.
func (p *Plugin) devInfoOnDisk() (map[string]bool, error) {
	ents, err := os.ReadDir(p.cfg.DevInfoDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("device info directory: %w", err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		if id, ok := devInfoID(p.cfg.Resource, e.Name()); ok && e.Type().IsRegular() {
			out[id] = true
		}
	}
	return out, nil
}

// devInfoID is the device ID of a device-info file name of resource's:
// <resource with / as ->-<id>-device.json (containerdev.DevInfoPath) whose
// id is a PCI address or a share of one. Another pool's file never
// matches (a resource name holds no ':', so the rest of a longer name is
// no address), nor a sandbox pool's token or a temporary file.
func devInfoID(resource, name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, strings.ReplaceAll(resource, "/", "-")+"-")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "-device.json")
	if !ok {
		return "", false
	}
	pci := id
	if pf, _, err := deviceid.ParseShare(id); err == nil {
		pci = pf
	}
	if _, err := pciaddr.Parse(pci); err != nil {
		return "", false
	}
	return id, true
}

// pruneDevInfo makes the pool's files those of the devices kubelet holds:
// it removes the file of each device PodResources does not list (unless
// Allocate gave the device within devInfoGrace before the list was
// taken), and writes back the missing file of a listed device.
func (p *Plugin) pruneDevInfo(ctx context.Context) error {
	if !p.keepsDevInfo() || p.cfg.Holders == nil {
		return nil
	}
	listedAt := p.cfg.Now()
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	pods, err := p.cfg.Holders.List(ctx)
	if err != nil {
		return fmt.Errorf("listing PodResources: %w", err)
	}
	held := map[string]bool{}
	for _, pod := range pods {
		for _, c := range pod.Containers {
			for _, ds := range c.Devices {
				if ds.Resource != p.cfg.Resource {
					continue
				}
				for _, id := range ds.IDs {
					held[id] = true
				}
			}
		}
	}
	snap := p.current()
	p.devInfo.mu.Lock()
	defer p.devInfo.mu.Unlock()
	if p.devInfo.closed {
		return nil
	}
	onDisk, err := p.devInfoOnDisk()
	errs := []error{err}
	for id := range held {
		if e, ok := snap.devs[id]; ok && !onDisk[id] {
			errs = append(errs, p.writeDevInfoLocked(e.dev))
		}
	}
	for id := range p.known(onDisk) {
		at, recent := p.devInfo.allocated[id]
		if held[id] || (recent && listedAt.Sub(at) < devInfoGrace) {
			continue
		}
		errs = append(errs, p.removeDevInfoLocked(id))
	}
	return errors.Join(errs...)
}

// removeAllDevInfo removes every file of the pool when the plugin stops;
// Allocate writes none after it.
func (p *Plugin) removeAllDevInfo() error {
	p.devInfo.mu.Lock()
	defer p.devInfo.mu.Unlock()
	p.devInfo.closed = true
	onDisk, err := p.devInfoOnDisk()
	errs := []error{err}
	for id := range p.known(onDisk) {
		errs = append(errs, p.removeDevInfoLocked(id))
	}
	return errors.Join(errs...)
}

// known are the devices whose file may exist: on disk, or allocated by
// this process (a directory that could not be read lists none).
func (p *Plugin) known(onDisk map[string]bool) map[string]bool {
	out := map[string]bool{}
	for id := range onDisk {
		out[id] = true
	}
	for id := range p.devInfo.allocated {
		out[id] = true
	}
	return out
}

func (p *Plugin) removeDevInfoLocked(id string) error {
	delete(p.devInfo.allocated, id)
	if err := atomicfile.Remove(containerdev.DevInfoPath(p.cfg.DevInfoDir, p.cfg.Resource, id)); err != nil {
		return fmt.Errorf("device info file: %w", err)
	}
	return nil
}

// keepDevInfo compares the files with PodResources now and every
// devInfoResync until ctx is done; the returned stop waits for that and
// removes every file of the pool.
func (p *Plugin) keepDevInfo(ctx context.Context) (stop func()) {
	p.devInfo.mu.Lock()
	p.devInfo.closed = false
	p.devInfo.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(devInfoResync)
		defer t.Stop()
		for {
			if err := p.pruneDevInfo(ctx); err != nil && ctx.Err() == nil {
				p.cfg.Log.Warn("device-info files not compared with PodResources", "resource", p.cfg.Resource, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		<-done
		if err := p.removeAllDevInfo(); err != nil {
			p.cfg.Log.Warn("device-info files not removed", "resource", p.cfg.Resource, "err", err)
		}
	}
}
