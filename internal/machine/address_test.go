package machine

import (
	"strings"
	"testing"
)

// TestAddressesFollowPCIAddr: addresses in a description follow
// internal/pciaddr's rules: either case and nvidia-smi's eight-digit domain
// are accepted and stored in canonical form, roots order numerically
// (pci2000:00 before pci10000:00), and a bad bdf says what is wrong.
func TestAddressesFollowPCIAddr(t *testing.T) {
	d, err := Parse([]byte(`{"id":"x","tree":[
	 {"kind":"root","domain_bus":"pci10000:00","children":[{"kind":"nic","bdf":"10000:01:00.0","class":"0x020700"}]},
	 {"kind":"root","domain_bus":"PCI-ish","children":[{"kind":"gpu","bdf":"00002000:1B:00.0"}]},
	 {"kind":"root","domain_bus":"pci0000:E0","children":[{"kind":"gpu","bdf":"0000:E1:00.0"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var roots, devs []string
	for _, r := range d.Roots {
		roots = append(roots, r.Address)
		devs = append(devs, r.Children[0].Address)
	}
	if got := strings.Join(roots, ","); got != "pci0000:e0,pci2000:1b,pci10000:00" {
		t.Errorf("roots = %s", got)
	}
	if got := strings.Join(devs, ","); got != "0000:e1:00.0,2000:1b:00.0,10000:01:00.0" {
		t.Errorf("devices = %s", got)
	}
	for bdf, reason := range map[string]string{
		"0000:01:20.0": "device 0x20 is above 0x1f",
		"0000:01:00.8": "function 8 is above 7",
		"01:00.0":      "want DDDD:BB:DD.F",
	} {
		_, err := Parse([]byte(`{"tree":[{"kind":"root","children":[{"kind":"gpu","bdf":"` + bdf + `"}]}]}`))
		if err == nil || !strings.Contains(err.Error(), "tree[0].children[0]: gpu has a bad bdf: ") || !strings.Contains(err.Error(), reason) {
			t.Errorf("bdf %s: %v, want %q", bdf, err, reason)
		}
	}
	if got := predictableName("0000:18:1f.3", false); got != "enp24s31f3np0" {
		t.Errorf("predictableName = %q", got)
	}
}
