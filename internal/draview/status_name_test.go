package draview_test

import (
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/draview"
)

// TestStatusNamesAreBoundedAt128: a container ID or interface name of 128
// characters names a record, one of 129 does not (the bound is checked
// apart from the character pattern).
func TestStatusNamesAreBoundedAt128(t *testing.T) {
	dir := t.TempDir()
	long := "a" + strings.Repeat("b", 127)
	ok := draview.DeviceStatus{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: long, IfName: "net1"}
	if err := draview.WriteStatus(dir, ok); err != nil {
		t.Fatalf("128-character container ID refused: %v", err)
	}
	for _, bad := range []draview.DeviceStatus{
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: long + "c", IfName: "net1"},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc", IfName: long + "c"},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "-abc", IfName: "net1"},
		{ClaimUID: "c1", PCI: "0000:18:00.2", ContainerID: "abc", IfName: ""},
	} {
		if err := draview.WriteStatus(dir, bad); err == nil {
			t.Errorf("WriteStatus(container %q, ifname %q) succeeded", bad.ContainerID, bad.IfName)
		}
	}
}
