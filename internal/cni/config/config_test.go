package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

func TestValidFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid-*.json")
	if len(files) == 0 {
		t.Fatal("no valid fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.DeviceID == "" && c.Device == "" && c.Token == "" && c.ResourceName == "" {
				t.Fatal("no device resolved")
			}
		})
	}
}

// wantField maps each invalid fixture to the field its error must name and
// the CNI error code.
var wantField = map[string]struct {
	field string
	code  uint
}{
	"invalid-unknown-field.json":       {"vlan_id", types.ErrUnsupportedField},
	"invalid-no-device.json":           {"deviceID", types.ErrInvalidNetworkConfig},
	"invalid-bad-pci.json":             {"deviceID", types.ErrInvalidNetworkConfig},
	"invalid-both-devices.json":        {"device", types.ErrInvalidNetworkConfig},
	"invalid-mtu.json":                 {"mtu", types.ErrInvalidNetworkConfig},
	"invalid-mac-multicast.json":       {"mac", types.ErrInvalidNetworkConfig},
	"invalid-vlan.json":                {"vlan", types.ErrInvalidNetworkConfig},
	"invalid-qos-without-vlan.json":    {"vlanQoS", types.ErrInvalidNetworkConfig},
	"invalid-spoofchk.json":            {"spoofchk", types.ErrInvalidNetworkConfig},
	"invalid-link-state.json":          {"link_state", types.ErrInvalidNetworkConfig},
	"invalid-rates.json":               {"min_tx_rate", types.ErrInvalidNetworkConfig},
	"invalid-rdma-type.json":           {"rdma", types.ErrInvalidNetworkConfig},
	"invalid-ipam-no-type.json":        {"ipam.type", types.ErrInvalidNetworkConfig},
	"invalid-relative-statedir.json":   {"stateDir", types.ErrInvalidNetworkConfig},
	"invalid-lock-timeout.json":        {"lockTimeout", types.ErrInvalidNetworkConfig},
	"invalid-device-name.json":         {"device", types.ErrInvalidNetworkConfig},
	"invalid-not-json.json":            {"(document)", types.ErrDecodingFailure},
	"invalid-missing-name.json":        {"name", types.ErrInvalidNetworkConfig},
	"invalid-pcibusid-differs.json":    {"pciBusID", types.ErrInvalidNetworkConfig},
	"invalid-vlanproto.json":           {"vlanProto", types.ErrInvalidNetworkConfig},
	"invalid-vfio.json":                {"vfioPciMode", types.ErrInvalidNetworkConfig},
	"invalid-guid.json":                {"args.cni.guid", types.ErrInvalidNetworkConfig},
	"invalid-loglevel.json":            {"logLevel", types.ErrInvalidNetworkConfig},
	"invalid-pkey.json":                {"pkey", types.ErrInvalidNetworkConfig},
	"invalid-resource-name.json":       {"resourceName", types.ErrInvalidNetworkConfig},
	"invalid-binding-dir.json":         {"bindingDir", types.ErrInvalidNetworkConfig},
	"invalid-podresources-socket.json": {"podResourcesSocket", types.ErrInvalidNetworkConfig},
	"invalid-multirail.json":           {"multiRail", types.ErrInvalidNetworkConfig},
	"invalid-trailing-brace.json":      {"(document)", types.ErrDecodingFailure},
	"invalid-duplicate-key.json":       {"mtu", types.ErrDecodingFailure},
	"invalid-dns-key-case.json":        {"dns", types.ErrInvalidNetworkConfig},
}

func TestInvalidFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.json")
	if len(files) != len(wantField) {
		t.Fatalf("%d invalid fixtures, %d expectations", len(files), len(wantField))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := wantField[filepath.Base(f)]
			if !ok {
				t.Fatal("no expectation for fixture")
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(data)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse error %v, want *Error", err)
			}
			if !strings.Contains(err.Error(), want.field+":") {
				t.Errorf("error %q does not name field %q", err, want.field)
			}
			if ce.Code() != want.code {
				t.Errorf("code %d, want %d", ce.Code(), want.code)
			}
		})
	}
}

func TestParseReportsEveryField(t *testing.T) {
	_, err := Parse([]byte(`{"cniVersion":"1.1.0","name":"n","type":"t","deviceID":"x","mtu":1,"vlan":-1,"foo":1,"bar":2}`))
	for _, f := range []string{"deviceID:", "mtu:", "vlan:", "foo:", "bar:"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("error %v does not name %s", err, f)
		}
	}
}

func TestParseValues(t *testing.T) {
	data, _ := os.ReadFile("testdata/valid-full-vf.json")
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.DeviceID != "0000:03:00.2" {
		t.Errorf("DeviceID %q, want the short form normalised", c.DeviceID)
	}
	if c.MTU != 9000 || c.MAC.String() != "02:11:22:33:44:55" || !c.RDMA || c.IPAMType != "whereabouts" {
		t.Errorf("values not decoded: %+v", c)
	}
	if *c.VF.VLAN != 100 || *c.VF.VLANQoS != 3 || c.VF.SpoofChk != Off || c.VF.Trust != On ||
		*c.VF.LinkState != 1 || *c.VF.MinTxRate != 1000 || *c.VF.MaxTxRate != 25000 {
		t.Errorf("VF settings not decoded: %+v", c.VF)
	}
	if c.StateDir != "/var/lib/railyard/cni" || c.LockTimeout != 2*time.Second {
		t.Errorf("knobs not decoded: %+v", c)
	}
	if c.DeviceInfoFile != "/run/devinfo.json" {
		t.Errorf("DeviceInfoFile %q", c.DeviceInfoFile)
	}
}

func TestRuntimeConfigOverrides(t *testing.T) {
	c, err := Parse([]byte(`{"cniVersion":"1.1.0","name":"n","type":"t","deviceID":"0000:01:00.0",
		"runtimeConfig":{"deviceID":"0000:02:00.1","mac":"02:00:00:00:00:01","ips":["1.2.3.4/24"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.DeviceID != "0000:02:00.1" || c.MAC.String() != "02:00:00:00:00:01" {
		t.Errorf("runtimeConfig did not take precedence: %q %s", c.DeviceID, c.MAC)
	}
	if c.StateDir != DefaultStateDir || c.SysfsRoot != DefaultSysfsRoot || c.LockTimeout != DefaultLockTimeout {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestParseRejectsTrailingData(t *testing.T) {
	if _, err := Parse([]byte(`{"cniVersion":"1.1.0","name":"n","type":"t","device":"a"} {}`)); err == nil {
		t.Fatal("trailing data accepted")
	}
	if _, err := Parse([]byte(`null`)); err == nil {
		t.Fatal("null accepted")
	}
}

func TestParseNetworkNeedsNoDevice(t *testing.T) {
	conf := []byte(`{"cniVersion":"1.1.0","name":"n","type":"t","cni.dev/valid-attachments":[{"containerID":"a","ifname":"net1"}]}`)
	if _, err := Parse(conf); err == nil {
		t.Fatal("Parse accepted a config without a device")
	}
	c, err := ParseNetwork(conf)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ValidAttachments) != 1 || c.ValidAttachments[0].ContainerID != "a" {
		t.Fatalf("valid attachments %+v", c.ValidAttachments)
	}
}

// TestMultiRailIsOnUnlessSetOff: multiRail defaults to true (harmless
// with one rail), false turns it off; DEL reads it the same way.
func TestMultiRailIsOnUnlessSetOff(t *testing.T) {
	base := `{"cniVersion":"1.1.0","name":"n","type":"t","deviceID":"0000:01:00.0"`
	for conf, want := range map[string]bool{base + `}`: true, base + `,"multiRail":true}`: true, base + `,"multiRail":false}`: false} {
		c, err := Parse([]byte(conf))
		if err != nil || c.MultiRail != want {
			t.Errorf("%s: MultiRail %v, %v; want %v", conf, c != nil && c.MultiRail, err, want)
		}
		if d, _ := ParseDel([]byte(conf)); d.MultiRail != want {
			t.Errorf("%s: DEL's MultiRail %v, want %v", conf, d.MultiRail, want)
		}
	}
}
