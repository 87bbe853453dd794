package cni

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/cni/state/statetest"
	"github.com/railyard-io/railyard/internal/netops"
)

// corrupt replaces device key's record with content (what a power loss
// left of an unsynced record).
func (w *world) corrupt(key, content string) {
	w.t.Helper()
	path := state.Store{Dir: w.stateDir}.RecordPath(key)
	must(w.t, os.MkdirAll(filepath.Dir(path), 0o700))
	must(w.t, os.WriteFile(path, []byte(content), 0o600))
}

func (w *world) loggingPlugin(log *bytes.Buffer) *Plugin {
	p := w.plugin()
	p.Log = slog.New(slog.NewTextHandler(log, nil))
	return p
}

// TestDelOfAnAttachmentWithACorruptRecordFakeVF: DEL releases a device
// whose record is empty or cut, from the marker on the pod's interface,
// and removes the record, with a warning (it failed with code 999 for
// good).
func TestDelOfAnAttachmentWithACorruptRecordFakeVF(t *testing.T) {
	t.Parallel()
	for _, content := range []string{"", `{"key":"0000:03:00.2","contain`} {
		w := newWorld(t)
		a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
		if _, err := w.plugin().Add(ctx, a); err != nil {
			t.Fatal(err)
		}
		w.corrupt(vfPCI, content)
		var log bytes.Buffer
		if err := w.loggingPlugin(&log).Del(ctx, a); err != nil {
			t.Fatalf("DEL with record %q: %v", content, err)
		}
		if !strings.Contains(log.String(), "does not decode") {
			t.Errorf("DEL logged %q, want a warning about the record", log.String())
		}
		if _, ok := w.ops.LinkIn(netops.Host, origLink.Name); !ok {
			t.Fatalf("record %q: device not back on the host as %s: host %v", content, origLink.Name, w.ops.LinkNames(netops.Host))
		}
		if names := w.ops.LinkNames(pod1); len(names) != 0 {
			t.Errorf("record %q: pod still has %v", content, names)
		}
		if _, err := (state.Store{Dir: w.stateDir}).Get(vfPCI); !errors.Is(err, state.ErrNoRecord) {
			t.Errorf("record %q after DEL: %v, want removed", content, err)
		}
	}
}

// TestAddRepairsACorruptRecordOfAFreeDeviceFakeVF: a record that does not
// decode for a device free on the host is stale: ADD removes it (with a
// warning) and attaches.
func TestAddRepairsACorruptRecordOfAFreeDeviceFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.corrupt(vfPCI, "")
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	var log bytes.Buffer
	if _, err := w.loggingPlugin(&log).Add(ctx, a); err != nil {
		t.Fatalf("ADD over a corrupt record of a free device: %v", err)
	}
	if !strings.Contains(log.String(), "does not decode") {
		t.Errorf("ADD logged %q, want a warning about the record", log.String())
	}
	must(t, w.plugin().Del(ctx, a))
	w.assertPristine()
}

// TestAddRefusesACorruptRecordOfAHeldDeviceFakeVF: when the device is in
// a pod, ADD refuses and says the way out (DEL of that pod, or removing
// the record).
func TestAddRefusesACorruptRecordOfAHeldDeviceFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := w.plugin().Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	w.corrupt(vfPCI, "{")
	_, err := w.plugin().Add(ctx, args("c2", pod2, "net1", w.conf(vfPCI, nil)))
	path := state.Store{Dir: w.stateDir}.RecordPath(vfPCI)
	if Code(err) != types.ErrTryAgainLater || !strings.Contains(err.Error(), "DEL the pod") || !strings.Contains(err.Error(), path) {
		t.Fatalf("ADD on a held device with a corrupt record: code %d, %v", Code(err), err)
	}
	if _, ok := w.ops.LinkIn(pod1, "net1"); !ok {
		t.Fatal("the refused ADD took the device from its pod")
	}
}

// TestGCWithCorruptRecordsFakeVF: GC does not fail the network on a record
// that does not decode: a free device's is removed, a held device's left
// for its pod's DEL, and the other attachments are collected as usual.
func TestGCWithCorruptRecordsFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.plugin()
	a2 := args("c2", pod2, "net1", w.conf(vf2PCI, nil))
	if _, err := p.Add(ctx, a2); err != nil {
		t.Fatal(err)
	}
	w.corrupt(vfPCI, "")         // free on the host: stale
	w.corrupt("netdev-gone", "") // no such netdev: left
	gc := w.conf(vfPCI, map[string]any{"deviceID": nil, "cni.dev/valid-attachments": []map[string]string{}})
	var log bytes.Buffer
	if err := w.loggingPlugin(&log).GC(ctx, args("", "", "", gc)); err != nil {
		t.Fatalf("GC: %v", err)
	}
	st := state.Store{Dir: w.stateDir}
	if _, err := st.Get(vfPCI); !errors.Is(err, state.ErrNoRecord) {
		t.Errorf("corrupt record of a free device after GC: %v, want removed", err)
	}
	if _, err := st.Get("netdev-gone"); !errors.Is(err, state.ErrCorrupt) {
		t.Errorf("corrupt record of a device not on the host after GC: %v, want left", err)
	}
	if _, ok := w.ops.LinkIn(pod2, "net1"); ok {
		t.Error("GC with an empty valid list left c2's attachment")
	}
	if !strings.Contains(log.String(), "does not decode") {
		t.Errorf("GC logged %q, want warnings about the records", log.String())
	}
}

// TestGCWithoutValidAttachmentsFailsFakeVF: a GC without
// cni.dev/valid-attachments (or with null) is refused and releases
// nothing; it tore down every attachment of the network.
func TestGCWithoutValidAttachmentsFailsFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.plugin()
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string]map[string]any{
		"absent": {"deviceID": nil},
		"null":   {"deviceID": nil, "cni.dev/valid-attachments": nil},
	} {
		gc := w.conf(vfPCI, extra)
		if name == "null" {
			gc = append(gc[:len(gc)-1], []byte(`,"cni.dev/valid-attachments":null}`)...)
		}
		err := p.GC(ctx, args("", "", "", gc))
		if Code(err) != types.ErrInvalidNetworkConfig || !strings.Contains(err.Error(), "cni.dev/valid-attachments") {
			t.Errorf("GC with valid-attachments %s: code %d, %v; want code 7", name, Code(err), err)
		}
		if err := p.Check(ctx, a); err != nil {
			t.Fatalf("GC with valid-attachments %s released the attachment: %v", name, err)
		}
	}
}

// TestDelOfUnknownDevicesLeavesNoLockFilesFakeVF: DELs of devices
// railyard-cni never attached create nothing in the state directory (100
// DELs left 105 lock files), and a released device's lock file goes.
func TestDelOfUnknownDevicesLeavesNoLockFilesFakeVF(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.plugin()
	for i := range 100 {
		dev := fmt.Sprintf("0000:99:%02x.%d", i/8, i%8)
		must(t, p.Del(ctx, args(fmt.Sprintf("c%d", i), pod1, "net1", w.conf(dev, nil))))
	}
	must(t, p.Del(ctx, args("c1", pod1, "net1", w.conf("", map[string]any{"deviceID": nil, "device": "nosuch0"}))))
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	must(t, p.Del(ctx, a))
	if left, _ := filepath.Glob(filepath.Join(w.stateDir, "locks", "*")); len(left) != 0 {
		t.Fatalf("%d lock files left: %v", len(left), left)
	}
	w.assertPristine()
}

// TestDelOnAReadOnlyStateDirFakeVFReadOnlyMount: DEL of a device never
// attached succeeds on a read-only state directory (it failed with code
// 999 creating its lock, and the pod stayed Terminating); DEL of an
// attached device still takes its lock there (read-only open).
func TestDelOnAReadOnlyStateDirFakeVFReadOnlyMount(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.plugin()
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	statetest.ReadOnly(t, w.stateDir)
	if err := p.Del(ctx, args("c2", pod2, "net1", w.conf(vf2PCI, nil))); err != nil {
		t.Fatalf("DEL of a device never attached on a read-only state directory: %v", err)
	}
	// The attached device is released; only its record cannot go.
	err := p.Del(ctx, a)
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("DEL of an attached device on a read-only state directory: %v, want the record's removal to fail", err)
	}
	if _, ok := w.ops.LinkIn(netops.Host, origLink.Name); !ok {
		t.Fatal("the device did not come back to the host")
	}
}
