package migrate

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/containerdev"
)

func one(t *testing.T, resources string, opts Options) (v1alpha1.Pool, *Report) {
	t.Helper()
	cfg, r := convert(t, []byte(`{"resourceList": [`+resources+`]}`), opts)
	if len(cfg.Pools) != 1 {
		t.Fatalf("pools %v", poolNames(cfg))
	}
	return cfg.Pools[0], r
}

func TestRootDevices(t *testing.T) {
	p, r := one(t, `{"resourceName": "a", "selectors": {"rootDevices": ["0000:86:00.0", "0000:87:00.0#0-3"]}}`, Options{})
	if !slices.Equal(p.Selectors.PCIAddresses, []string{"0000:86:00.0", "0000:87:00.0"}) || p.DeviceKind != v1alpha1.KindVF {
		t.Errorf("pool %+v", p)
	}
	if m := entry(t, r, "intel.com/a", "selectors.rootDevices", Dropped); !strings.Contains(m, "#0-3") || !strings.Contains(m, "every VF of 0000:87:00.0") {
		t.Errorf("range: %q", m)
	}
	entry(t, r, "intel.com/a", "selectors.rootDevices", Changed)

	// With pciAddresses in the same object the plugin wanted both.
	p, r = one(t, `{"resourceName": "a", "selectors": {"pciAddresses": ["0000:86:00.2"], "rootDevices": ["0000:86:00.0"]}}`, Options{})
	if !slices.Equal(p.Selectors.PCIAddresses, []string{"0000:86:00.2"}) {
		t.Errorf("pool %+v", p)
	}
	entry(t, r, "intel.com/a", "selectors.rootDevices", Dropped)
	entry(t, r, "intel.com/a", "pciAddresses", Note) // a PF address in a vf pool selects its VFs
}

func TestLinkTypes(t *testing.T) {
	p, r := one(t, `{"resourceName": "a", "selectors": {"linkTypes": ["ether", "eth"]}}`, Options{})
	if !slices.Equal(p.Selectors.LinkLayers, []string{v1alpha1.LinkLayerEthernet}) {
		t.Errorf("linkLayers %v", p.Selectors.LinkLayers)
	}
	if m := entry(t, r, "intel.com/a", "selectors.linkTypes", Dropped); !strings.HasPrefix(m, `"eth"`) {
		t.Errorf("eth: %q", m)
	}
	if m := entry(t, r, "intel.com/a", "selectors.linkTypes", Changed); m != "[ether] -> linkLayers [Ethernet]" {
		t.Errorf("ether: %q", m)
	}
}

// TestSelectorListMerge: objects that differ in one field merge into its
// union; an object without values for that field matches anything.
func TestSelectorListMerge(t *testing.T) {
	p, r := one(t, `{"resourceName": "a", "selectors": [
		{"vendors": ["15b3"], "pfNames": ["ens1f0#0-3"], "isRdma": true},
		{"vendors": ["15b3"], "pfNames": ["ens2f0"], "isRdma": true}]}`, Options{})
	if !slices.Equal(p.Selectors.PFNames, []string{"ens1f0#0-3", "ens2f0"}) || !slices.Equal(p.Selectors.Vendors, []string{"15b3"}) {
		t.Errorf("merged %+v", p.Selectors)
	}
	if m := entry(t, r, "intel.com/a", "selectors", Changed); !strings.Contains(m, "differ only in pfNames") {
		t.Errorf("merge: %q", m)
	}
	if r.Lossy() {
		t.Errorf("lossy:\n%s", reportText(r))
	}

	p, _ = one(t, `{"resourceName": "a", "selectors": [{"vendors": ["15b3"], "isRdma": true}, {"vendors": ["15b3"]}]}`, Options{})
	if p.Selectors.RDMACapable != nil || !p.DeviceNodes.UMAD {
		t.Errorf("rdmaCapable union of true and any: %+v (umad %v)", p.Selectors, p.DeviceNodes.UMAD)
	}

	// Two fields differ: the first object only, the second reported.
	p, r = one(t, `{"resourceName": "a", "selectors": [
		{"vendors": ["15b3"], "pfNames": ["ens1f0"]},
		{"vendors": ["8086"], "pfNames": ["ens2f0"]}]}`, Options{})
	if !slices.Equal(p.Selectors.PFNames, []string{"ens1f0"}) || !slices.Equal(p.Selectors.Vendors, []string{"15b3"}) {
		t.Errorf("first object only: %+v", p.Selectors)
	}
	if m := entry(t, r, "intel.com/a", "selectors[1]", Dropped); !strings.Contains(m, "selectors[0]") {
		t.Errorf("dropped object: %q", m)
	}

	// An object that matches nothing Railyard can select is left out
	// before merging.
	p, r = one(t, `{"resourceName": "a", "selectors": [{"drivers": ["vfio-pci"]}, {"drivers": ["mlx5_core"]}]}`, Options{})
	if !slices.Equal(p.Selectors.Drivers, []string{"mlx5_core"}) {
		t.Errorf("live object: %+v", p.Selectors)
	}
	entry(t, r, "intel.com/a", "selectors[0]", Dropped)
}

func TestDeviceKind(t *testing.T) {
	for name, tc := range map[string]struct {
		resource string
		opts     Options
		want     string
		action   Action
		contains string
	}{
		"pfNames":        {`{"resourceName": "a", "selectors": {"pfNames": ["ens1f0"]}}`, Options{}, "vf", Changed, "pfNames only against VFs"},
		"VF IDs":         {`{"resourceName": "a", "selectors": {"vendors": ["15b3"], "devices": ["101e"]}}`, Options{}, "vf", Changed, "inside a VM"},
		"PF IDs":         {`{"resourceName": "a", "selectors": {"vendors": ["15b3"], "devices": ["1021", "101d"]}}`, Options{}, "pf", Changed, "no VFs"},
		"IDs no vendor":  {`{"resourceName": "a", "selectors": {"devices": ["101e"]}}`, Options{}, "vf", Note, "vf assumed"},
		"unknown ID":     {`{"resourceName": "a", "selectors": {"vendors": ["15b3"], "devices": ["101e", "abcd"]}}`, Options{}, "vf", Note, "vf assumed"},
		"PF driver":      {`{"resourceName": "a", "selectors": {"drivers": ["ice"]}}`, Options{}, "pf", Changed, "bind only PFs"},
		"forced":         {`{"resourceName": "a", "selectors": {"vendors": ["15b3"]}}`, Options{DeviceKind: "pf"}, "pf", Changed, "forced"},
		"forced against": {`{"resourceName": "a", "selectors": {"pfNames": ["ens1f0"]}}`, Options{DeviceKind: "pf"}, "pf", Note, "although"},
		"both kinds": {`{"resourceName": "a", "selectors": [{"vendors": ["15b3"], "devices": ["1018"]}, {"vendors": ["15b3"], "devices": ["1017"]}]}`,
			Options{}, "vf", Dropped, "a Railyard pool serves one kind"},
	} {
		p, r := one(t, tc.resource, tc.opts)
		if p.DeviceKind != tc.want {
			t.Errorf("%s: kind %s, want %s", name, p.DeviceKind, tc.want)
		}
		if m := entry(t, r, "intel.com/a", "deviceKind", tc.action); !strings.Contains(m, tc.contains) {
			t.Errorf("%s: %q lacks %q", name, m, tc.contains)
		}
	}
}

// TestPluginDecoding: keys match case-insensitively and unknown keys are
// ignored, as encoding/json does for the plugin; the converter says so.
func TestPluginDecoding(t *testing.T) {
	t.Parallel()
	cfg, r := convert(t, []byte(`{"resourcePrefix": "example.com", "ResourceList": [{"ResourceName": "a", "excludeTopology": true, "colour": "red",
		"selectors": {"Vendors": ["15b3"], "IsRdma": true, "vendor": ["8086"], "auxTypes": ["sf"]}}]}`), Options{})
	p := cfg.Pools[0]
	if p.Name != "intel.com/a" || !slices.Equal(p.Selectors.Vendors, []string{"15b3"}) || !cmp.Equal(p.Selectors.RDMACapable, yes()) {
		t.Errorf("pool %+v", p)
	}
	if m := entry(t, r, "", "resourcePrefix", Note); !strings.Contains(m, "--resource-prefix") {
		t.Errorf("global prefix: %q", m)
	}
	entry(t, r, "intel.com/a", "colour", Note)
	entry(t, r, "intel.com/a", "selectors.vendor", Note)
	entry(t, r, "intel.com/a", "selectors.auxTypes", Note) // not a netDevice selector
	entry(t, r, "intel.com/a", "excludeTopology", Dropped)
}

// TestSelectorObjectPerDeviceType: selectors decode into the device
// type's own object, so a key of another type is ignored whatever its
// value, as in the plugin.
func TestSelectorObjectPerDeviceType(t *testing.T) {
	cfg, r, err := ConvertSRIOVDP([]byte(`{"resourceList": [
		{"resourceName": "fpga", "deviceType": "accelerator", "selectors": {"vendors": ["8086"], "pfNames": 5}},
		{"resourceName": "net", "selectors": [{"vendors": ["15b3"], "auxTypes": {"not": "a list"}}]}]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := poolNames(cfg); !slices.Equal(got, []string{"intel.com/net"}) {
		t.Errorf("pools %v", got)
	}
	entry(t, r, "intel.com/net", "selectors[0].auxTypes", Note)
	entry(t, r, "intel.com/fpga", "deviceType", Skipped)
	// The same wrong value in a key of the type is refused.
	if _, _, err := ConvertSRIOVDP([]byte(`{"resourceList": [{"resourceName": "a", "selectors": {"pfNames": 5}}]}`), Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("netDevice pfNames: 5 accepted: %v", err)
	}
}

// TestEnvNameDifference: the plugin keeps '-' in PCIDEVICE_* names,
// Railyard does not; the report says so, with Railyard's real rule.
func TestEnvNameDifference(t *testing.T) {
	p, r := one(t, `{"resourceName": "sriov-a", "resourcePrefix": "example.com", "selectors": {"pfNames": ["ens1f0"]}}`, Options{})
	m := entry(t, r, "example.com/sriov-a", "resourceName", Note)
	if want := "PCIDEVICE_EXAMPLE_COM_SRIOV-A, Railyard names it " + containerdev.EnvName(p.Name); !strings.Contains(m, want) {
		t.Errorf("%q lacks %q", m, want)
	}
	_, r = one(t, `{"resourceName": "sriov_a", "selectors": {"pfNames": ["ens1f0"]}}`, Options{})
	for _, e := range r.Entries {
		if e.Field == "resourceName" && e.Action == Note {
			t.Errorf("same variable name noted: %q", e.Message)
		}
	}
}

func TestReportWrite(t *testing.T) {
	_, r := one(t, `{"resourceName": "a", "selectors": {"pfNames": ["ens1f0"], "ddpProfiles": ["GTP"]}}`, Options{})
	text := reportText(r)
	for _, want := range []string{
		"1 resource(s) -> 1 pool(s): 0 skipped, 1 dropped,",
		"\nintel.com/a\n  changed  resourcePrefix: not set",
		"  dropped  selectors.ddpProfiles: [GTP]: Railyard does not read Intel DDP profiles",
		"\nwhole file\n  note     policy: every pool gets policy gpu-aware",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}
