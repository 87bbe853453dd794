package simulate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cli/clitest"

	"github.com/railyard-io/railyard/machines"
)

func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, NewCommand, "", args...)
}

// TestJSONContract checks the field names tools rely on and that all six
// policies are present.
func TestJSONContract(t *testing.T) {
	out, _, err := execute(t, "--machine", "dgx-1", "--nodes", "10", "--pods", "800", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Machine  string `json:"machine"`
		Nodes    int    `json:"nodes"`
		Pods     int    `json:"pods"`
		Policies []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Machine != "dgx-1" || v.Nodes != 10 || v.Pods != 800 {
		t.Errorf("header %+v", v)
	}
	var names []string
	for _, p := range v.Policies {
		names = append(names, p["name"].(string))
		for _, k := range []string{"gdr_fraction", "mean_gbps", "rejected", "alloc_p99_us"} {
			if _, ok := p[k].(float64); !ok {
				t.Errorf("policy %v: field %q missing or not a number", p["name"], k)
			}
		}
		if f := p["gdr_fraction"].(float64); f < 0 || f > 1 {
			t.Errorf("gdr_fraction %v out of range", f)
		}
	}
	if got := strings.Join(names, ","); got != "kubelet,numa,spread,gpu-aware,packed,optimal" {
		t.Errorf("policies %s", got)
	}
}

func TestTableAndReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	out, errOut, err := execute(t, "--machine", "dgx-a100", "--nodes", "5", "--pods", "300", "--mix", "1:1,8:1", "--devices-per", "pod",
		"--report", dir, "--report-format", "svg", "--policies", "kubelet,gpu-aware")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dgx-a100", "gpu-aware", "kubelet", "GDR", "PXB", "devices per pod"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "optimal") {
		t.Errorf("--policies ignored:\n%s", out)
	}
	if !strings.Contains(errOut, "index.html") {
		t.Errorf("stderr %q does not name the report", errOut)
	}
	for _, f := range []string{"index.html", "classes.svg", "gdr.svg", "bandwidth.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestSysfsSource(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sys")
	if err := machines.WriteSysfs("roce-8gpu-4nic", root, 4); err != nil {
		t.Fatal(err)
	}
	out, _, err := execute(t, "--sysfs", root, "--nodes", "4", "--pods", "200", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Machine string
		Config  struct {
			DevicesPerNode int `json:"devices_per_node"`
			PFsPerNode     int `json:"pfs_per_node"`
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Config.PFsPerNode != 4 || v.Config.DevicesPerNode != 16 {
		t.Errorf("sysfs tree with 4 PFs x 4 VFs gave %+v", v.Config)
	}
	if !strings.Contains(v.Machine, root) {
		t.Errorf("machine %q does not name the sysfs root", v.Machine)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--mix", "3"},
		{"--bw", "PIX=fast"},
		{"--policies", "nearest"},
		{"--report-format", "gif"},
		{"--devices-per", "rail", "--nodes", "1"},
		{"--machine", "dgx-9000"},
		{"--nodes", "0"},
		{"--load", "0"},
		{"--machine", "dgx-1", "--sysfs", "/tmp"},
	} {
		if _, _, err := execute(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
