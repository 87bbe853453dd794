package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli/clitest"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
)

func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(t, NewCommand, stdin, args...)
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join("..", "..", "migrate", "testdata", name)
}

func exitCode(err error) int {
	var e *iostreams.ExitError
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestSRIOVDPStdinToStdout: a configuration that maps completely exits 0
// and prints YAML the agent loads.
func TestSRIOVDPStdinToStdout(t *testing.T) {
	in, err := os.ReadFile(testdata(t, "roce-two-rails.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, string(in), "sriovdp")
	if code := exitCode(err); code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut)
	}
	if !strings.HasPrefix(out, "# railyard-agent configuration converted from the SR-IOV network device plugin's") {
		t.Errorf("no header:\n%s", out)
	}
	cfg, err := v1alpha1.Parse([]byte(out))
	if err != nil {
		t.Fatalf("the agent refuses the output: %v\n%s", err, out)
	}
	if len(cfg.Pools) != 2 || cfg.Pools[0].Name != "intel.com/sriov_111" || cfg.Pools[1].Selectors.PFNames[0] != "ens112f0np0" {
		t.Errorf("pools %+v", cfg.Pools)
	}
	if !strings.HasPrefix(errOut, "2 resource(s) -> 2 pool(s): 0 skipped, 0 dropped,") {
		t.Errorf("report:\n%s", errOut)
	}
}

// TestSRIOVDPLossyWritesAndExits1: the README example loses fields and
// resources: the file is written all the same, the exit code is 1.
func TestSRIOVDPLossyWritesAndExits1(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "agent.yaml")
	out, errOut, err := run(t, "", "sriovdp", "--in", testdata(t, "readme-example.json"), "--out", dst)
	if code := exitCode(err); code != ExitDropped || !strings.Contains(err.Error(), "4 resource(s) skipped") {
		t.Fatalf("exit %d: %v", code, err)
	}
	if out != "" {
		t.Errorf("stdout with --out: %q", out)
	}
	cfg, err := v1alpha1.Load(dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Pools) != 6 {
		t.Errorf("%d pools", len(cfg.Pools))
	}
	for _, want := range []string{"10 resource(s) -> 6 pool(s): 4 skipped", "\nintel.com/intel_fpga\n  skipped  deviceType: accelerator",
		"  dropped  selectors[0].needVhostNet: true"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("report lacks %q:\n%s", want, errOut)
		}
	}
}

// TestSRIOVDPInvalidExits2: input the plugin would refuse writes nothing.
func TestSRIOVDPInvalidExits2(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "agent.yaml")
	_, _, err := run(t, "", "sriovdp", "--in", testdata(t, "invalid-readme-trailing-comma.json"), "--out", dst)
	if code := exitCode(err); code != ExitInvalid || !strings.Contains(err.Error(), "invalid SR-IOV device plugin configuration") {
		t.Errorf("exit %d: %v", code, err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("output written for invalid input: %v", err)
	}
	if _, _, err := run(t, "", "sriovdp", "--in", filepath.Join(t.TempDir(), "missing.json")); exitCode(err) != ExitInvalid {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := run(t, `{"resourceList": [{"resourceName": "a", "selectors": {}}]}`, "sriovdp", "--device-kind", "nic"); exitCode(err) != ExitInvalid {
		t.Errorf("bad --device-kind: %v", err)
	}
}

// TestSRIOVDPNothingConvertible exits 1 and writes no configuration.
func TestSRIOVDPNothingConvertible(t *testing.T) {
	out, errOut, err := run(t, `{"resourceList": [{"resourceName": "fpga", "deviceType": "accelerator", "selectors": {}}]}`, "sriovdp")
	if exitCode(err) != ExitDropped || out != "" || !strings.Contains(errOut, "skipped  deviceType: accelerator") {
		t.Errorf("exit %d out %q report %q err %v", exitCode(err), out, errOut, err)
	}
}

func TestSRIOVDPOptions(t *testing.T) {
	in := `{"resourceList": [{"resourceName": "a", "selectors": {"vendors": ["15b3"]}}]}`
	out, _, err := run(t, in, "sriovdp", "--resource-prefix", "example.com", "--device-kind", "pf")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := v1alpha1.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Pools[0]; p.Name != "example.com/a" || p.DeviceKind != v1alpha1.KindPF {
		t.Errorf("pool %+v", p)
	}
}

func TestSRIOVDPHelp(t *testing.T) {
	out, _, err := run(t, "", "sriovdp", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Examples:", "railyard migrate sriovdp --out railyard-agent.yaml", "Exit status: 0", "--device-kind"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// --in goes through internal/inputfile: a FIFO fails at once instead of
// blocking, and input over the bound is refused with it named.
func TestSRIOVDPInputIsBounded(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "config.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := run(t, "", "sriovdp", "--in", fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if exitCode(err) != ExitInvalid || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
			t.Errorf("FIFO: exit %d, err %v", exitCode(err), err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("migrate sriovdp hangs on a FIFO --in")
	}
	_, _, err := run(t, strings.Repeat(" ", 1<<20+1), "sriovdp")
	if exitCode(err) != ExitInvalid || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("1 MiB + 1 on stdin: exit %d, err %v", exitCode(err), err)
	}
}

// --key chooses one of the SR-IOV network operator's per-node keys.
func TestSRIOVDPKey(t *testing.T) {
	t.Parallel()
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dp}\ndata:\n" +
		"  node-a: '{\"resourceList\": [{\"resourceName\": \"a\", \"selectors\": {\"vendors\": [\"15b3\"], \"isRdma\": true}}]}'\n" +
		"  node-b: '{\"resourceList\": [{\"resourceName\": \"b\", \"selectors\": {\"vendors\": [\"15b3\"], \"isRdma\": true}}]}'\n"
	if _, _, err := run(t, in, "sriovdp"); exitCode(err) != ExitInvalid || !strings.Contains(err.Error(), "choose one with --key") {
		t.Errorf("no --key: exit %d, err %v", exitCode(err), err)
	}
	out, _, err := run(t, in, "sriovdp", "--key", "node-b")
	if err != nil || !strings.Contains(out, "name: intel.com/b") || strings.Contains(out, "intel.com/a") {
		t.Errorf("--key node-b: %v\n%s", err, out)
	}
}
