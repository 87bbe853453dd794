package multustest

import (
	"encoding/json"
	"testing"
)

func TestDelegateSetsDeviceIDAndPCIBusIDEverywhere(t *testing.T) {
	got, err := Delegate([]byte(`{"cniVersion":"1.0.0","name":"n","type":"railyard-cni","deviceID":"old","mtu":9000}`), "0000:3b:00.0")
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json sorts map keys, as Multus's re-marshal does.
	want := `{"cniVersion":"1.0.0","deviceID":"0000:3b:00.0","mtu":9000,"name":"n","pciBusID":"0000:3b:00.0","type":"railyard-cni"}`
	if string(got) != want {
		t.Errorf("Delegate = %s\nwant       %s", got, want)
	}
	list, err := Delegate([]byte(`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"railyard-cni"},{"type":"tuning"}]}`), "0000:3b:00.1")
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Plugins []map[string]string `json:"plugins"`
	}
	if err := json.Unmarshal(list, &l); err != nil {
		t.Fatal(err)
	}
	for i, p := range l.Plugins {
		if p["deviceID"] != "0000:3b:00.1" || p["pciBusID"] != "0000:3b:00.1" {
			t.Errorf("plugin %d = %v", i, p)
		}
	}
	if _, err := Delegate([]byte(`[1]`), "x"); err == nil {
		t.Error("a config that is not an object accepted")
	}
}

func TestRuntimeConf(t *testing.T) {
	rt := RuntimeConf("ns1/roce", "net1", Pod{Namespace: "ns1", Name: "p", UID: "u", SandboxID: "abc", Netns: "/proc/1/ns/net"}, "0000:3b:00.0", "/var/run/k8s.cni.cncf.io/devinfo/cni")
	if rt.Args[0] != [2]string{"IgnoreUnknown", "true"} || rt.Args[3] != [2]string{"K8S_POD_INFRA_CONTAINER_ID", "abc"} || len(rt.Args) != 5 {
		t.Errorf("Args = %v", rt.Args)
	}
	if got := rt.CapabilityArgs["CNIDeviceInfoFile"]; got != "/var/run/k8s.cni.cncf.io/devinfo/cni/ns1-roce-abc_net1" {
		t.Errorf("CNIDeviceInfoFile = %v", got)
	}
	if RuntimeConf("n", "net1", Pod{}, "", "/d").CapabilityArgs != nil {
		t.Error("capability args without a device")
	}
}
