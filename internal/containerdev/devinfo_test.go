package containerdev

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDevInfo: the device-info-spec 1.1 document of a VF names its PF, a
// PF's (pf "" or the device itself) names none, and pci-address is always
// written (required for type pci by the spec); a device without a valid
// PCI address gets no document.
func TestDevInfo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, pci, pf, rdma string
		want                string
	}{
		{"VF", "0000:18:00.2", "0000:18:00.0", "mlx5_13",
			`{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:18:00.2","rdma-device":"mlx5_13","pf-pci-address":"0000:18:00.0"}}`},
		{"PF", "0000:18:00.0", "0000:18:00.0", "mlx5_0",
			`{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:18:00.0","rdma-device":"mlx5_0"}}`},
		{"no PF, no RDMA device", "0000:18:00.0", "", "",
			`{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:18:00.0"}}`},
	} {
		d, err := NewDevInfo(c.pci, c.pf, c.rdma)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, string(b)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// Even a zero document keeps pci-address: the field is required.
	b, _ := json.Marshal(DevInfo{})
	if diff := cmp.Diff(`{"type":"","version":"","pci":{"pci-address":""}}`, string(b)); diff != "" {
		t.Errorf("zero document (-want +got):\n%s", diff)
	}
	for _, pci := range []string{"", "eth0", "netdev-eth0", "0000:zz:00.0"} {
		if _, err := NewDevInfo(pci, "", "mlx5_0"); !errors.Is(err, ErrNoPCIAddress) {
			t.Errorf("NewDevInfo(%q): %v, want ErrNoPCIAddress", pci, err)
		}
	}
}

// TestDevInfoPath: named as network-attachment-definition-client looks
// it up: the resource's and the ID's / as -.
func TestDevInfoPath(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff("/d/railyard.io-rdma_vf-0000:18:00.2-device.json", DevInfoPath("/d", "railyard.io/rdma_vf", "0000:18:00.2")); diff != "" {
		t.Errorf("DevInfoPath (-want +got):\n%s", diff)
	}
}
