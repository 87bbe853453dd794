package multustest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// multusNameCases are the attachments whose device-info file names Multus
// builds (ParseNetworks, DelegateName, DeviceInfoPath mirror
// parsePodNetworkAnnotation, LoadDelegateNetConf and GetCNIDeviceInfoPath):
// a NAD in the pod's namespace and in another one, a config with and
// without its own "name", and "namespace/name" references, plain and JSON.
var multusNameCases = []struct {
	name       string
	annotation string
	conf       string
	want       string // the device-info file's base name for sandbox abc, net1
}{
	{"NAD in the pod's namespace", "roce", `{"name":"roce","type":"railyard-cni"}`, "team-a-roce-abc_net1"},
	{"NAD in another namespace (the chart's layout)", "railyard-system/railyard-rdma-pf", `{"name":"railyard-rdma-pf","type":"railyard-cni"}`, "railyard-system-railyard-rdma-pf-abc_net1"},
	{"config name differs from the NAD's", "railyard-system/railyard-rdma-pf", `{"name":"rdma-net","type":"railyard-cni"}`, "railyard-system-railyard-rdma-pf-abc_net1"},
	{"config without a name", "roce", `{"type":"railyard-cni"}`, "team-a-roce-abc_net1"},
	{"interface request and spaces", " railyard-system/roce@net1 ", `{"name":"x","type":"railyard-cni"}`, "railyard-system-roce-abc_net1"},
	{"JSON with a namespace", `[{"name":"roce","namespace":"railyard-system","interface":"net1"}]`, `{"name":"x","type":"railyard-cni"}`, "railyard-system-roce-abc_net1"},
	{"JSON without a namespace", `[{"name":"roce"}]`, `{"name":"x","type":"railyard-cni"}`, "team-a-roce-abc_net1"},
	{"a conflist", "railyard-system/roce", `{"name":"list","plugins":[{"type":"railyard-cni"}]}`, "railyard-system-roce-abc_net1"},
}

func TestDeviceInfoNamesAsMultusBuildsThem(t *testing.T) {
	for _, tc := range multusNameCases {
		t.Run(tc.name, func(t *testing.T) {
			sels, err := ParseNetworks(tc.annotation, "team-a")
			if err != nil || len(sels) != 1 {
				t.Fatalf("ParseNetworks(%q) = %v, %v", tc.annotation, sels, err)
			}
			delegate, err := DelegateName([]byte(tc.conf), &sels[0])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("/d/"+tc.want, DeviceInfoPath("/d", delegate, "abc", "net1")); diff != "" {
				t.Errorf("device-info path (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDelegateNameOfAFileKeepsTheConfigName: a delegate read from a file
// (no selection element: a cluster network given by path) keeps its
// config's name.
func TestDelegateNameOfAFileKeepsTheConfigName(t *testing.T) {
	got, err := DelegateName([]byte(`{"name":"cluster-net","type":"railyard-cni"}`), nil)
	if err != nil || got != "cluster-net" {
		t.Errorf("DelegateName = %q, %v; want cluster-net", got, err)
	}
	if _, err := DelegateName([]byte(`[`), nil); err == nil {
		t.Error("a config that does not decode accepted")
	}
}

func TestParseNetworksRefusesWhatMultusRefuses(t *testing.T) {
	for _, a := range []string{"", "a/b/c", "a@b@c", "Roce", "ns/-x", "x@" + "an-interface-name-too-long", `[{"name":`} {
		if sels, err := ParseNetworks(a, "team-a"); err == nil {
			t.Errorf("ParseNetworks(%q) = %v, want an error", a, sels)
		}
	}
	sels, err := ParseNetworks("a, b/c@net2", "team-a")
	want := []Selection{{Name: "a", Namespace: "team-a"}, {Name: "c", Namespace: "b", InterfaceRequest: "net2"}}
	if diff := cmp.Diff(want, sels); err != nil || diff != "" {
		t.Errorf("ParseNetworks (-want +got):\n%s%v", diff, err)
	}
}
