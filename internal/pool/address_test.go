package pool

import (
	"strings"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

// TestCompileRefusesBadAddress: a pool compiled without validation still
// refuses an address pciaddr does not accept, rather than matching nothing.
func TestCompileRefusesBadAddress(t *testing.T) {
	_, err := Compile(v1alpha1.Pool{Name: "p", DeviceKind: "vf", Selectors: v1alpha1.Selectors{PCIAddresses: []string{"0000:9a:20.0"}}})
	if err == nil || !strings.Contains(err.Error(), `pool p: pciAddresses: PCI address "0000:9a:20.0": device 0x20 is above 0x1f`) {
		t.Errorf("err = %v", err)
	}
}
