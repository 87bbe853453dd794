package fabric

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/fabric"
)

func TestPublishRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: []string{"--wait", "1ns"}, want: "--wait 1ns"},
		{args: []string{"--wait", "1h"}, want: "--wait 1h0m0s"},
		{args: []string{"--watch", "--interval", "1ms"}, want: "--interval 1ms"},
		{args: []string{"--watch", "--dry-run"}, want: "mutually exclusive"},
		{args: []string{"--machine", "dgx-h100", "--sysfs", "/sys", "--dry-run", "--wait", "1s"}, want: "mutually exclusive"},
	} {
		_, _, err := clitest.Run(t, NewCommand, "", append([]string{"publish"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("publish %v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// dryRun is what `railyard fabric publish --dry-run` prints.
type dryRun struct {
	Ports  []fabric.Port     `json:"ports"`
	Labels map[string]string `json:"labels"`
}

// publishDryRun runs `railyard fabric publish --dry-run` on a built-in
// machine model and decodes what it prints.
func publishDryRun(t *testing.T, machine string) dryRun {
	t.Helper()
	out, _, err := clitest.Run(t, NewCommand, "", "publish", "--machine", machine, "--dry-run", "--wait", "1s")
	if err != nil {
		t.Fatalf("publish --dry-run: %v\n%s", err, out)
	}
	var got dryRun
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	return got
}

// The RoCE model's netdevs do not exist on this host, so every port says
// why it has no neighbor; the real listening is tested against lldpd in
// internal/lldp and on the multi-node cluster's fabric.
func TestPublishDryRunOnAModelWithoutItsNetdevs(t *testing.T) {
	t.Parallel()
	got := publishDryRun(t, "roce-8gpu-4nic")
	rails := 0
	for _, p := range got.Ports {
		if p.Rail >= 0 {
			rails++
		}
		if p.Switch != "" || !strings.Contains(p.NoNeighbor, "no such netdev") {
			t.Errorf("port %+v: want no neighbor, saying its netdev is missing", p)
		}
	}
	if rails != 4 || len(got.Labels) != 0 {
		t.Errorf("%d rails, labels %v; want 4 rails and no labels", rails, got.Labels)
	}
}
