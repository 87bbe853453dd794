//go:build e2e

package multinode

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestBenchRunAcrossNodes runs `railyard bench run` (the real binary, as a
// user would, with the cluster's kubeconfig) with a plan whose probe
// server is on gpu-1 and client on gpu-2: Railyard's own TCP probe from
// Railyard's image (imported into every node by up.sh) over the pod
// network across the two nodes (variant tcp-podnet: this cluster has no
// Multus, so no plan's secondary network), and checks the report.
// TestBenchRunOverADRARail runs the same over a rail.
func TestBenchRunAcrossNodes(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 5*time.Minute)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	got := benchRun(ctx, t, c, benchplan.Options{
		Image: railyardImage(t), Nodes: []string{gpus[0].Name, gpus[1].Name},
		Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: []benchplan.Variant{benchplan.TCPPodNetwork}, ProbeDuration: "3s",
	})
	if !strings.Contains(got.stdout, "the client reached the server pod's IP (pod network)") {
		t.Errorf("the client did not reach the server on its pod IP:\n%s", got.stdout)
	}
	t.Logf("TCP probe %s to %s over the pod network: %.3f Gb/s received", gpus[0].Name, gpus[1].Name, got.gbps[string(benchplan.TCPPodNetwork)])
}

// TestBenchRunOverADRARail: `railyard bench run` of a plan whose rail is
// delivered by DRA (bench plan's --device-class: the chart's rail-0 pool
// as a DRA pool, and no Multus: every GPU node's containerd runs rail 0's
// railyard-cni network for a pod holding a rail-0 NIC, with addresses
// from whereabouts). The real resourceclaim controller makes each pod's
// claim from the plan's ResourceClaimTemplate, the scheduler and the
// agents give the server on gpu-1 and the client on gpu-2 each its node's
// rail-0 NIC, and bench run sends the client to the address the server's
// claim records (status.devices networkData, written by the agent after
// railyard-cni's attach): the probe crosses leaf 0, not the pod network.
// The tcp-podnet run of the same plan is the baseline, in the same run.
func TestBenchRunOverADRARail(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 6*time.Minute)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	const rail = 0
	name := string(railPool(rail))
	installDRAChart(ctx, t, c, onlyPool(name))
	addRailNetworks(t, c, true, rail)
	got := benchRun(ctx, t, c, benchplan.Options{
		Image: railyardImage(t), Nodes: []string{gpus[0].Name, gpus[1].Name},
		Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: []benchplan.Variant{benchplan.TCP, benchplan.TCPPodNetwork}, ProbeDuration: "3s",
		Rails: []benchplan.Rail{{DeviceClass: dra.PoolDeviceClass(name).Name}},
	})
	_, subnet, err := net.ParseCIDR(c.Info.Rails[rail].Subnet)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`railyard-bench-probe-tcp: the client reached the server's (\S+) on (\S+) \(device \S+ of its claim \S+, from the claim's status.devices networkData\)`).FindStringSubmatch(got.stdout)
	if m == nil || !subnet.Contains(net.ParseIP(m[1])) || m[2] != "eth1" {
		t.Fatalf("the tcp run's client did not reach the server's rail-%d address (%s on eth1) from its claim:\n%s", rail, subnet, got.stdout)
	}
	overRail, overPodnet := got.gbps[string(benchplan.TCP)], got.gbps[string(benchplan.TCPPodNetwork)]
	t.Logf("TCP probe %s to %s: %.3f Gb/s over rail %d (%s, leaf %d), %.3f Gb/s over the pod network: ratio %.2f",
		gpus[0].Name, gpus[1].Name, overRail, rail, m[1], rail, overPodnet, overRail/overPodnet)

	// iperf3 (bench plan's perftest pair, tcp variant) the same way, from
	// the e2e bench-tools image (busybox and the host's iperf3): its
	// client, planned to reach the server's Service name, gets the
	// server's rail address from bench run instead (no cluster DNS).
	got = benchRun(ctx, t, c, benchplan.Options{
		Image: framework.BenchToolsImage, ProbeImage: railyardImage(t), Nodes: []string{gpus[0].Name, gpus[1].Name},
		Tests: []benchplan.Test{benchplan.Perftest}, Variants: []benchplan.Variant{benchplan.TCP}, IperfSeconds: 3,
		Rails: []benchplan.Rail{{DeviceClass: dra.PoolDeviceClass(name).Name}},
	})
	m = regexp.MustCompile(`railyard-bench-perftest-tcp: the client reached the server's (\S+) on eth1 \(device \S+ of its claim \S+, from the claim's status.devices networkData\)`).FindStringSubmatch(got.stdout)
	if m == nil || !subnet.Contains(net.ParseIP(m[1])) {
		t.Fatalf("the iperf3 client did not reach the server's rail-%d address from its claim:\n%s", rail, got.stdout)
	}
	t.Logf("iperf3 %s to %s over rail %d (%s): %.3f Gb/s", gpus[0].Name, gpus[1].Name, rail, m[1], got.gbps[string(benchplan.TCP)])
}

type benchOutcome struct {
	stdout string
	gbps   map[string]float64 // received Gb/s by scenario
}

// benchRun writes o's plan, runs `railyard bench run` on it and checks
// that every run succeeded and the report has a bandwidth for each.
func benchRun(ctx context.Context, t *testing.T, c *framework.MultiCluster, o benchplan.Options) benchOutcome {
	t.Helper()
	objs, err := benchplan.Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := benchplan.YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	cmd := exec.CommandContext(ctx, railyardBin(t), "bench", "run", "-f", filepath.Join(dir, "plan.yaml"), "--kubeconfig", c.Kubeconfig, "--timeout", "3m", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("bench run took %v\n%s", time.Since(start).Round(time.Millisecond), stdout.String())
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Scenario string `json:"scenario"`
			Result   struct {
				Tool    string             `json:"tool"`
				OK      bool               `json:"ok"`
				Summary map[string]float64 `json:"summary"`
			} `json:"result"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	got := benchOutcome{stdout: stdout.String(), gbps: map[string]float64{}}
	for _, r := range rep.Results {
		if !r.Result.OK || !(r.Result.Summary["received_gbps"] > 0) {
			t.Errorf("scenario %s: ok %v, summary %v", r.Scenario, r.Result.OK, r.Result.Summary)
		}
		got.gbps[r.Scenario] = r.Result.Summary["received_gbps"]
	}
	if len(got.gbps) != len(o.Variants) {
		t.Fatalf("report has scenarios %v, want %v:\n%s", slices.Sorted(maps.Keys(got.gbps)), o.Variants, data)
	}
	for _, v := range o.Variants {
		if !regexp.MustCompile(`\s` + regexp.QuoteMeta(string(v)) + `\s+succeeded\s`).MatchString(got.stdout) {
			t.Errorf("run of %s did not succeed:\n%s", v, got.stdout)
		}
	}
	return got
}

// imageTag is the chart's appVersion, the tag of the image up.sh imports.
func imageTag(t *testing.T, repo string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "deploy/helm/railyard/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}
