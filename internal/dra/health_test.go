package dra_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/machines"
)

// unhealthyTree is a DGX H100 tree with PF mlx5_0 (0000:18:00.0, taking
// its VFs with it) and VF mlx5_14 (0000:29:00.2) DOWN.
func unhealthyTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"mlx5_0", "mlx5_14"} {
		if err := fakesysfs.SetPortState(root, dev, 1, fakesysfs.PortDown); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

var unhealthyPCIs = []string{"0000:18:00.0", "0000:18:00.1", "0000:18:00.2", "0000:29:00.2"}

// With TaintUnhealthy, an unhealthy device is published with one
// NoSchedule taint whose value is a valid label value saying why, healthy
// devices carry none, and nothing is left out; every device's health is
// in Health either way.
func TestUnhealthyDevicesAreTaintedWhenAsked(t *testing.T) {
	topo, err := discovery.Discover(context.Background(), unhealthyTree(t))
	if err != nil {
		t.Fatal(err)
	}
	pools := []v1alpha1.Pool{{Name: "railyard.io/vf", DeviceKind: v1alpha1.KindVF}, {Name: "railyard.io/pf", DeviceKind: v1alpha1.KindPF}}
	for _, taint := range []bool{false, true} {
		got, err := dra.Build("node-a", topo, pools, dra.Options{TaintUnhealthy: taint})
		if err != nil {
			t.Fatal(err)
		}
		bad := map[string]bool{}
		for _, pci := range unhealthyPCIs {
			bad[pci] = true
		}
		published, tainted, unhealthy := 0, 0, 0
		for _, p := range got {
			for _, d := range p.Devices {
				published++
				pci := attrString(d, dra.AttrPCIBusID)
				switch {
				case bad[pci] && len(d.Taints) == 1:
					tainted++
					tt := d.Taints[0]
					if tt.Key != dra.TaintKey || tt.Effect != resourceapi.DeviceTaintEffectNoSchedule || !strings.Contains(tt.Value, "port-1-is-down") {
						t.Errorf("taint=%v %s: taint %+v", taint, d.Name, tt)
					}
					if errs := validation.IsValidLabelValue(tt.Value); len(errs) > 0 {
						t.Errorf("taint=%v %s: taint value %q: %v", taint, d.Name, tt.Value, errs)
					}
				case len(d.Taints) != 0:
					t.Errorf("taint=%v %s (%s): taints %+v on a device that is healthy or should be left out", taint, d.Name, pci, d.Taints)
				case bad[pci]:
					t.Errorf("taint=%v %s: unhealthy and published without a taint", taint, d.Name)
				}
			}
			for _, h := range p.Health {
				if h.Healthy == bad[h.PCI] {
					t.Errorf("taint=%v %s: healthy %v", taint, h.PCI, h.Healthy)
				}
				if !h.Healthy {
					unhealthy++
					if !strings.Contains(h.Reason, "port 1 is DOWN") || h.Device == "" {
						t.Errorf("taint=%v %s: reason %q, device %q", taint, h.PCI, h.Reason, h.Device)
					}
				}
			}
		}
		wantPublished, wantTainted := 34, 0
		if taint {
			wantPublished, wantTainted = 38, 4
		}
		if published != wantPublished || tainted != wantTainted || unhealthy != 4 {
			t.Errorf("taint=%v: %d published, %d tainted, %d unhealthy in Health; want %d, %d, 4", taint, published, tainted, unhealthy, wantPublished, wantTainted)
		}
	}
}

// A pool with a tainted device is cut into slices of at most 64 devices
// (the API refuses a slice of more with taints); without one, 128.
func TestTaintedPoolsUseTheSmallerSliceLimit(t *testing.T) {
	devs := make([]resourceapi.Device, 100)
	p := dra.Pool{Devices: devs}
	if n := len(p.Slices()); n != 1 {
		t.Errorf("untainted: %d slices, want 1", n)
	}
	p.Tainted = []dra.Unpublished{{PCI: "0000:18:00.0", Reason: "port 1 is DOWN"}}
	s := p.Slices()
	if len(s) != 2 || len(s[0]) != resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
		t.Errorf("tainted: %d slices (first of %d), want 2 of at most 64", len(s), len(s[0]))
	}
}

// A device a prepared claim holds whose PCI function left the bus (the VF
// destroyed, the NIC removed) is gone: the pod holding it cannot work.
// With TaintUnhealthy it stays published as it was, with one NoExecute
// taint, so the device taint eviction controller evicts that pod; without,
// it is left out as before. A function still listed on the bus but
// unreadable is not gone, and a held device of another pool is not this
// pool's. The tree is a generated dgx-h100 sysfs.
func TestGoneHeldDevicesAreTaintedNoExecute(t *testing.T) {
	root, discover := dgxTree(t)
	const vf, unreadable = "0000:18:00.1", "0000:18:00.2"
	pool := v1alpha1.Pool{Name: "railyard.io/vf", DeviceKind: v1alpha1.KindVF}
	before := buildOne(t, discover(), pool)
	held, kept := find(t, before, vf), find(t, before, unreadable)
	foreign := held
	foreign.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{dra.AttrPool: {StringValue: new("railyard.io/other")}}

	// The VF leaves the bus; the other one stays listed but its device
	// ID cannot be read.
	if err := os.Remove(filepath.Join(root, "bus/pci/devices", vf)); err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(root, "bus/pci/devices", unreadable))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "device")); err != nil {
		t.Fatal(err)
	}
	topo := discover()
	if topo.Listed(vf) || !topo.Listed(unreadable) {
		t.Fatalf("listed: removed VF %v, unreadable VF %v", topo.Listed(vf), topo.Listed(unreadable))
	}
	for _, taint := range []bool{false, true} {
		pools, err := dra.Build("node-a", topo, []v1alpha1.Pool{pool}, dra.Options{TaintUnhealthy: taint,
			Prepared: map[string]resourceapi.Device{vf: held, unreadable: kept, "0000:18:00.7": foreign}})
		if err != nil {
			t.Fatal(err)
		}
		p := pools[0]
		var got *resourceapi.Device
		for i := range p.Devices {
			switch p.Devices[i].Name {
			case held.Name:
				got = &p.Devices[i]
			case kept.Name, foreign.Name:
				t.Errorf("taint=%v: %s published as gone", taint, p.Devices[i].Name)
			}
		}
		health := map[string]dra.DeviceHealth{}
		for _, h := range p.Health {
			health[h.PCI] = h
		}
		if h := health[vf]; h.Healthy || h.Reason != dra.GoneReason || h.Device != held.Name {
			t.Errorf("taint=%v: health of the gone VF %+v", taint, h)
		}
		if _, ok := health[unreadable]; ok {
			t.Errorf("taint=%v: the unreadable VF is in Health: %+v", taint, health[unreadable])
		}
		if !taint {
			if got != nil || !slices.Contains(p.Unpublished, dra.Unpublished{PCI: vf, Reason: dra.GoneReason}) {
				t.Errorf("taint=false: published %v, unpublished %+v", got != nil, p.Unpublished)
			}
			continue
		}
		want := held
		want.Taints = []resourceapi.DeviceTaint{{Key: dra.TaintKey, Value: "gone", Effect: resourceapi.DeviceTaintEffectNoExecute}}
		if got == nil || !equality.Semantic.DeepEqual(*got, want) || !slices.Contains(p.Tainted, dra.Unpublished{PCI: vf, Reason: dra.GoneReason}) {
			t.Errorf("taint=true: published %+v, tainted %+v; want the held device with a NoExecute taint", got, p.Tainted)
		}
		if len(held.Taints) != 0 {
			t.Errorf("the held device given was changed: %+v", held.Taints)
		}
	}
}

// A NIC the firmware policy refuses (topology.NIC.Refused, set by the
// agent) is unhealthy by the one health rule: under TaintUnhealthy it and
// its VFs are published with a NoSchedule taint naming the firmware, and
// the other NICs stay untainted; without, they are left out.
func TestRefusedFirmwareIsTaintedNoSchedule(t *testing.T) {
	root := t.TempDir()
	if err := machines.WriteSysfs("dgx-h100", root, 2); err != nil {
		t.Fatal(err)
	}
	topo, err := discovery.Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	const reason = "firmware 28.38.1900 below the minimum 28.39.1002 for 15b3:1021"
	for i := range topo.NICs {
		if topo.NICs[i].PCI == "0000:18:00.0" {
			topo.NICs[i].Refused = reason
		}
	}
	refused := []string{"0000:18:00.0", "0000:18:00.1", "0000:18:00.2"}
	pools := []v1alpha1.Pool{{Name: "railyard.io/vf", DeviceKind: v1alpha1.KindVF}, {Name: "railyard.io/pf", DeviceKind: v1alpha1.KindPF}}
	for _, taint := range []bool{false, true} {
		got, err := dra.Build("node-a", topo, pools, dra.Options{TaintUnhealthy: taint})
		if err != nil {
			t.Fatal(err)
		}
		var tainted, left []string
		for _, p := range got {
			for _, d := range p.Devices {
				pci := attrString(d, dra.AttrPCIBusID)
				if len(d.Taints) == 0 {
					continue
				}
				tainted = append(tainted, pci)
				// The PF's value is its whole reason; a VF's starts with its
				// PF and is cut at a label value's 63 bytes.
				want := "firmware-28-38-1900-below-the-minimum-28-39-1002-for-15b3-1021"
				if pci != "0000:18:00.0" {
					want = "pf-0000-18-00-0-firmware-28-38-1900-below-the-minimum-28-39-100"
				}
				tt := d.Taints[0]
				if len(d.Taints) != 1 || tt.Key != dra.TaintKey || tt.Effect != resourceapi.DeviceTaintEffectNoSchedule || tt.Value != want {
					t.Errorf("taint=%v %s: taints %+v, want one %s=%s:NoSchedule", taint, pci, d.Taints, dra.TaintKey, want)
				}
			}
			for _, u := range p.Unpublished {
				left = append(left, u.PCI)
			}
			for _, h := range p.Health {
				if !h.Healthy && !strings.Contains(h.Reason, reason) {
					t.Errorf("taint=%v %s: reason %q", taint, h.PCI, h.Reason)
				}
			}
		}
		slices.Sort(tainted)
		slices.Sort(left)
		want, wantLeft := refused, []string(nil)
		if !taint {
			want, wantLeft = nil, refused
		}
		if !slices.Equal(tainted, want) || !slices.Equal(left, wantLeft) {
			t.Errorf("taint=%v: tainted %v, left out %v; want %v and %v", taint, tainted, left, want, wantLeft)
		}
	}
}
