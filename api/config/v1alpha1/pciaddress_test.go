package v1alpha1

import (
	"strings"
	"testing"
)

// TestPCIAddressSelectors: selectors follow internal/pciaddr's rules (either
// case, a domain of 4 to 8 digits; pools normalise them); a device above
// 0x1f or a function above 7, accepted before, is an error with its path.
func TestPCIAddressSelectors(t *testing.T) {
	doc := func(addrs string) string {
		return "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\nnodeName: node-1\npools:\n- name: railyard.io/rdma_pf\n  deviceKind: pf\n  selectors:\n    pciAddresses: [" + addrs + "]\n"
	}
	if _, err := Parse([]byte(doc(`"0000:18:00.0", "0000:1B:00.0", "00000000:1b:00.1", "10000:e1:00.0"`))); err != nil {
		t.Errorf("valid addresses refused: %v", err)
	}
	_, err := Parse([]byte(doc(`"0000:18:20.0", "0000:18:00.8", "18:00.0", "0000:18:0g.0"`)))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`pools[0].selectors.pciAddresses[0]: Invalid value: "0000:18:20.0": must be a PCI address (device 0x20 is above 0x1f)`,
		`pools[0].selectors.pciAddresses[1]: Invalid value: "0000:18:00.8": must be a PCI address (function 8 is above 7)`,
		`pools[0].selectors.pciAddresses[2]: Invalid value: "18:00.0": must be a PCI address (want DDDD:BB:DD.F)`,
		`pools[0].selectors.pciAddresses[3]: Invalid value: "0000:18:0g.0": must be a PCI address (device is not hex)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
