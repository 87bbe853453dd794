package vm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// doctorChecks runs `railyard doctor --json` on the VM and returns its
// checks by ID (the first of each).
func doctorChecks(t *testing.T) map[string]map[string]any {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(ctx, []string{"doctor", "--json"}, iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	t.Logf("railyard doctor --json: %v\n%s%s", err, out.String(), errOut.String())
	var rep struct {
		Checks []map[string]any `json:"checks"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("doctor output: %v (run error %v)", jerr, err)
	}
	m := map[string]map[string]any{}
	for _, c := range rep.Checks {
		if id, _ := c["id"].(string); m[id] == nil {
			m[id] = c
		}
	}
	return m
}

// railyard doctor on a real RDMA subsystem: the netns mode check follows
// the kernel's switch, and a Soft-RoCE device is not an RDMA NIC (no PCI
// function).
func TestDoctorOnRealRDMASubsystemRealRDMA(t *testing.T) {
	vmkernel.Require(t)
	vmkernel.Modprobe(t, "rdma_rxe")
	rxeOnVeth(t, "10.77.3.1/24")
	vmkernel.SetRDMANetnsMode(t, "shared")
	c := doctorChecks(t)["rdma-netns"]
	if c == nil || !strings.HasPrefix(c["summary"].(string), "shared") || c["fix"] == nil {
		t.Errorf("rdma-netns in shared mode: %v", c)
	}
	vmkernel.SetRDMANetnsMode(t, "exclusive")
	t.Cleanup(func() { vmkernel.SetRDMANetnsMode(t, "shared") })
	checks := doctorChecks(t)
	if c := checks["rdma-netns"]; c == nil || !strings.HasPrefix(c["summary"].(string), "exclusive") || c["fix"] != nil {
		t.Errorf("rdma-netns in exclusive mode: %v", c)
	}
	if c := checks["nics"]; c == nil || c["status"] != "fail" || c["summary"] != "no RDMA NIC found" {
		t.Errorf("nics with only a rxe device: %v", c)
	}
}
