//go:build e2e

package multinode

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/benchplan"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

// TestBenchRunAcrossNodes runs `railyard bench run` (the real binary, as a
// user would, with the cluster's kubeconfig) with a plan whose probe
// server is on gpu-1 and client on gpu-2: Railyard's own TCP probe from
// Railyard's image (imported into every node by up.sh) over the pod
// network across the two nodes (variant tcp-podnet: this cluster has no
// Multus, so no plan's secondary network), and checks the report.
func TestBenchRunAcrossNodes(t *testing.T) {
	c := mc(t)
	ctx := framework.Context(t, 5*time.Minute)
	bin := railyardBin(t)
	gpus := c.Info.GPUNodes()
	if len(gpus) < 2 {
		t.Skip("needs two GPU nodes")
	}
	objs, err := benchplan.Objects(benchplan.Options{
		Image: railyardImage(t), Nodes: []string{gpus[0].Name, gpus[1].Name},
		Tests: []benchplan.Test{benchplan.TCPProbe}, Variants: []benchplan.Variant{benchplan.TCPPodNetwork}, ProbeDuration: "3s",
	})
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
	cmd := exec.CommandContext(ctx, bin, "bench", "run", "-f", filepath.Join(dir, "plan.yaml"), "--kubeconfig", c.Kubeconfig, "--timeout", "3m", "--out", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("bench run took %v\n%s", time.Since(start).Round(time.Millisecond), stdout.String())
	if !strings.Contains(stdout.String(), "tcp-podnet  succeeded") {
		t.Errorf("runs table:\n%s", stdout.String())
	}
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
	if len(rep.Results) != 1 || !rep.Results[0].Result.OK || !(rep.Results[0].Result.Summary["received_gbps"] > 0) {
		t.Fatalf("report: %s", data)
	}
	t.Logf("TCP probe %s to %s over the pod network: %.3f Gb/s received", gpus[0].Name, gpus[1].Name, rep.Results[0].Result.Summary["received_gbps"])
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
