package multustest

import (
	"encoding/json"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/google/go-cmp/cmp"
)

// TestNetworkStatusAsMultusWritesIt: CreateNetworkStatus's entry for a
// one-interface result: the sandbox interface, every address, the
// gateway of a default route only, and the device-info document as read.
func TestNetworkStatusAsMultusWritesIt(t *testing.T) {
	var r current.Result
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(json.Unmarshal([]byte(`{"cniVersion":"1.0.0",
	 "interfaces":[{"name":"ens1f0"},{"name":"net1","mac":"02:00:00:00:00:01","mtu":9000,"sandbox":"/proc/1/ns/net"}],
	 "ips":[{"address":"10.1.0.5/24","interface":1}],
	 "routes":[{"dst":"0.0.0.0/0","gw":"10.1.0.254"},{"dst":"10.2.0.0/16","gw":"10.1.0.253"}]}`), &r))
	info := json.RawMessage(`{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:3b:00.2"}}`)
	got, err := NetworkStatus(&r, "railyard-system/railyard-rdma-pf", info)
	must(err)
	want := NetStatus{
		Name: "railyard-system/railyard-rdma-pf", Interface: "net1", Mac: "02:00:00:00:00:01", Mtu: 9000,
		IPs: []string{"10.1.0.5"}, Gateway: []string{"10.1.0.254"}, DeviceInfo: info,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NetworkStatus (-want +got):\n%s", diff)
	}
}
