package config

import (
	"os"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
)

func mustParseFile(t *testing.T, name string) *Config {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse %s: %v", name, err)
	}
	return c
}

// TestParseMultusDelegate: the configuration Multus hands a delegate of a
// network with a resourceName (deviceID and pciBusID at the top level,
// runtimeConfig for declared capabilities, args.cni for cni-args) is
// accepted, and the device is the one Multus named.
func TestParseMultusDelegate(t *testing.T) {
	c := mustParseFile(t, "valid-multus-delegate.json")
	if c.DeviceID != "0000:3b:00.0" {
		t.Errorf("DeviceID = %q", c.DeviceID)
	}
	if c.DeviceInfoFile != "/var/run/k8s.cni.cncf.io/devinfo/cni/default-roce-a-0e4f2c8a_net1-device.json" {
		t.Errorf("DeviceInfoFile = %q", c.DeviceInfoFile)
	}
}

// TestParsePCIBusIDAlone: a configuration carrying only pciBusID (as some
// meta-plugins set it) names the device.
func TestParsePCIBusIDAlone(t *testing.T) {
	c, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"railyard-cni","pciBusID":"3b:00.1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.DeviceID != "0000:3b:00.1" {
		t.Errorf("DeviceID = %q, want 0000:3b:00.1", c.DeviceID)
	}
}

func TestParseSriovCNIFields(t *testing.T) {
	c := mustParseFile(t, "valid-sriov-cni.json")
	if c.VF.VLANProto == nil || *c.VF.VLANProto != netops.VLANProto8021Q {
		t.Errorf("VLANProto = %v, want 0x8100", c.VF.VLANProto)
	}
	if *c.VF.VLAN != 111 || *c.VF.VLANQoS != 3 || c.VF.SpoofChk != On || c.VF.Trust != Off {
		t.Errorf("VF = %+v", c.VF)
	}
	if c.LogLevel != "info" || c.LogFile != "/var/log/railyard-cni.log" {
		t.Errorf("log = %q %q", c.LogLevel, c.LogFile)
	}
	ad, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"3b:00.2","vlan":5,"vlanProto":"802.1AD"}`))
	if err != nil {
		t.Fatal(err)
	}
	if *ad.VF.VLANProto != netops.VLANProto8021AD {
		t.Errorf("802.1AD parsed as %#x", *ad.VF.VLANProto)
	}
	for _, bad := range []string{
		`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"3b:00.2","vlanProto":"802.1q"}`,           // no vlan
		`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"3b:00.2","vlan":0,"vlanProto":"802.1ad"}`, // 802.1ad, vlan 0
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}

func TestParseIBSriovCNIFields(t *testing.T) {
	c := mustParseFile(t, "valid-ib-sriov-cni.json")
	if got := c.VF.GUID.String(); got != "02:00:00:00:00:00:00:11" {
		t.Errorf("GUID = %q", got)
	}
	if c.PKey != "0x7fff" || !c.IBKubernetes || c.IBKubernetesState != "configured" || !c.RDMA {
		t.Errorf("PKey %q IBKubernetes %v state %q RDMA %v", c.PKey, c.IBKubernetes, c.IBKubernetesState, c.RDMA)
	}
	// args.cni.guid is used when the runtimeConfig capability is absent.
	a, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"3b:00.2","args":{"cni":{"guid":"0a:00:00:00:00:00:00:01","labels":["x"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.VF.GUID.String() != "0a:00:00:00:00:00:00:01" {
		t.Errorf("GUID from args = %s", a.VF.GUID)
	}
	if _, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"3b:00.2","rdma":true,"rdmaIsolation":false}`)); err == nil {
		t.Error("rdma true with rdmaIsolation false accepted")
	}
}

// TestParseGCAttachmentsUnderBothNames: libcni v1.3 sends the GC list as
// cni.dev/valid-attachments and cni.dev/attachments.
func TestParseGCAttachmentsUnderBothNames(t *testing.T) {
	c := mustParseFile(t, "valid-gc-libcni.json")
	if len(c.ValidAttachments) != 1 || c.ValidAttachments[0].ContainerID != "c1" {
		t.Errorf("ValidAttachments = %+v", c.ValidAttachments)
	}
	only, err := ParseNetwork([]byte(`{"cniVersion":"1.1.0","name":"n","type":"t","cni.dev/attachments":[{"containerID":"c2","ifname":"net1"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(only.ValidAttachments) != 1 || only.ValidAttachments[0].ContainerID != "c2" {
		t.Errorf("ValidAttachments = %+v", only.ValidAttachments)
	}
}

// TestParseDelIsLenient: DEL reads what it needs from configurations ADD
// rejects, and keeps defaults for what it cannot read.
func TestParseDelIsLenient(t *testing.T) {
	cases := []struct {
		name, conf           string
		deviceID, ipam, info string
		stateDir             string
		problems             bool
	}{
		{"unknown field (Multus's pciBusID before it was known)",
			`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"0000:3b:00.0","someNewKey":1,"ipam":{"type":"host-local"}}`,
			"0000:3b:00.0", "host-local", "", DefaultStateDir, false},
		{"a value ADD rejects",
			`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"0000:3b:00.0","mtu":"big","vlan":99999,"stateDir":"/var/lib/railyard/cni"}`,
			"0000:3b:00.0", "", "", "/var/lib/railyard/cni", true},
		{"bad device, bad state dir",
			`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"nonsense","stateDir":"relative","CNIDeviceInfoFile":"/run/d.json"}`,
			"", "", "/run/d.json", DefaultStateDir, true},
		{"not JSON", `{"cniVersion":`, "", "", "", DefaultStateDir, true},
		{"empty", ``, "", "", "", DefaultStateDir, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, problems := ParseDel([]byte(tc.conf))
			if c == nil {
				t.Fatal("nil Config")
			}
			if c.DeviceID != tc.deviceID || c.IPAMType != tc.ipam || c.DeviceInfoFile != tc.info || c.StateDir != tc.stateDir {
				t.Errorf("DeviceID %q IPAM %q info %q stateDir %q", c.DeviceID, c.IPAMType, c.DeviceInfoFile, c.StateDir)
			}
			if c.SysfsRoot != DefaultSysfsRoot || c.LockTimeout != DefaultLockTimeout {
				t.Errorf("defaults lost: sysfs %q lock %v", c.SysfsRoot, c.LockTimeout)
			}
			if (len(problems) > 0) != tc.problems {
				t.Errorf("problems = %v, want some: %v", problems, tc.problems)
			}
		})
	}
}

// TestParseNamesEachBadlyTypedField: one field of the wrong type does not
// hide another.
func TestParseNamesEachBadlyTypedField(t *testing.T) {
	_, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"3b:00.2","mtu":"x","vlan":"y"}`))
	ce, ok := err.(*Error)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	fields := map[string]bool{}
	for _, f := range ce.Fields {
		fields[f.Field] = true
	}
	if !fields["mtu"] || !fields["vlan"] {
		t.Errorf("fields = %v, want mtu and vlan", ce.Fields)
	}
}
