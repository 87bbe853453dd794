package simulate

import (
	"strings"
	"testing"
)

// --devices-per all-pfs: one contender, all-pfs, with the devices it
// strands in the table; --policies with it is refused.
func TestAllPFsDevices(t *testing.T) {
	out, _, err := execute(t, "--machine", "roce-8gpu-4nic", "--devices-per", "all-pfs", "--nodes", "4", "--pods", "200", "--mix", "1:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one on every rail PF (all-pfs)", "all-pfs  allocate  100.0%", "4.00 (75.0% idle)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := execute(t, "--devices-per", "all-pfs", "--policies", "kubelet"); err == nil || !strings.Contains(err.Error(), "give no policies") {
		t.Errorf("--policies with all-pfs: %v", err)
	}
}
