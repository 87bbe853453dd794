package v1alpha1

import (
	"strings"
	"testing"
)

// TestPCIAddressFollowsPCIAddr: a PF's address follows internal/pciaddr's
// rules, is normalised to the kernel's form by Default, and a bad one is an
// error that says why.
func TestPCIAddressFollowsPCIAddr(t *testing.T) {
	t.Parallel()
	doc := func(addr string) []byte {
		return []byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- pciAddress: \"" + addr + "\"\n  numVFs: 2\n")
	}
	for in, want := range map[string]string{"0000:1B:00.0": "0000:1b:00.0", "00000000:1b:00.0": "0000:1b:00.0", "10000:E1:00.0": "10000:e1:00.0"} {
		p, err := Parse(doc(in))
		if err != nil || p.PFs[0].PCIAddress != want {
			t.Errorf("%s: %v, %v; want %s", in, p, err, want)
		}
	}
	for in, want := range map[string]string{
		"0000:1b:20.0": `pfs[0].pciAddress: Invalid value: "0000:1b:20.0": must be a PCI address DDDD:BB:DD.F (device 0x20 is above 0x1f)`,
		"18:00.0":      `pfs[0].pciAddress: Invalid value: "18:00.0": must be a PCI address DDDD:BB:DD.F (want DDDD:BB:DD.F)`,
	} {
		if _, err := Parse(doc(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", in, err, want)
		}
	}
	p := &NodePolicy{APIVersion: APIVersion, Kind: Kind, PFs: []PF{{PCIAddress: "0000:1B:00.0"}}}
	if errs := Validate(p); len(errs) == 0 || !strings.Contains(errs[0].Error(), "pfs[0].pciAddress: Invalid value: \"0000:1B:00.0\": must be a PCI address DDDD:BB:DD.F (not in the kernel's form)") {
		t.Errorf("undefaulted upper case: %v", errs)
	}
}
