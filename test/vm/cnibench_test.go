package vm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/railyard-io/railyard/internal/cni/config"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// EnvCNIBin names the railyard-cni binary hack/vm/test.sh builds for the VM.
const EnvCNIBin = "RAILYARD_CNI_BIN"

// cniExec runs a CNI plugin binary once and returns how long it took.
func cniExec(t *testing.T, bin, cmd, netns, conf string) time.Duration {
	t.Helper()
	c := exec.Command(bin)
	c.Env = append(os.Environ(), "CNI_COMMAND="+cmd, "CNI_CONTAINERID=bench1", "CNI_NETNS="+netns,
		"CNI_IFNAME=net1", "CNI_PATH="+filepath.Dir(bin), config.TestRootEnv+"="+os.TempDir())
	c.Stdin = strings.NewReader(conf)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), cmd, err, out.String())
	}
	return d
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

// ADD and DEL of railyard-cni on a real VF beside the reference host-device
// plugin (containernetworking/plugins v1.9.1) on the same VF, alternating
// in one run, as processes the way a runtime runs them. Times are under
// QEMU's TCG emulation: compare the ratio, not the absolute values.
func TestCNIAddDelTimeRealVF(t *testing.T) {
	vmkernel.Require(t)
	ry := os.Getenv(EnvCNIBin)
	hd, _ := filepath.Abs("../../_output/tools/cni/host-device")
	if ry == "" {
		t.Skip(EnvCNIBin + " is not set (hack/vm/test.sh builds railyard-cni and sets it)")
	}
	if _, err := os.Stat(hd); err != nil {
		t.Skipf("no reference host-device plugin (make cni-tools): %v", err)
	}
	pf := vmkernel.FirstPF(t)
	vf := vmkernel.EnsureVFs(t, pf.PCI, 2)[1]
	dev := vmkernel.Netdev(t, vf)
	pod := netnstest.NewNetns(t, "bench")
	state := t.TempDir()
	confs := []struct{ name, bin, conf string }{
		{"host-device", hd, fmt.Sprintf(`{"cniVersion":"1.0.0","name":"hd","type":"host-device","pciBusID":%q}`, vf)},
		{"railyard-cni", ry, fmt.Sprintf(`{"cniVersion":"1.0.0","name":"ry","type":"railyard-cni","deviceID":%q,"stateDir":%q,"sysfsRoot":"/sys"}`, vf, state)},
		{"railyard-cni+vf", ry, fmt.Sprintf(`{"cniVersion":"1.0.0","name":"ry","type":"railyard-cni","deviceID":%q,"stateDir":%q,"sysfsRoot":"/sys",
			"mac":"02:bb:00:00:00:0b","vlan":100,"vlanQoS":3,"spoofchk":"off","trust":"on"}`, vf, state)},
	}
	const rounds = 20
	add := map[string][]time.Duration{}
	del := map[string][]time.Duration{}
	for i := -1; i < rounds; i++ { // round -1 warms the page cache (binaries come over 9p)
		for _, c := range confs {
			a := cniExec(t, c.bin, "ADD", pod, c.conf)
			d := cniExec(t, c.bin, "DEL", pod, c.conf)
			if i >= 0 {
				add[c.name], del[c.name] = append(add[c.name], a), append(del[c.name], d)
			}
			if got := vmkernel.Netdev(t, vf); got != dev {
				t.Fatalf("%s round %d: VF netdev back as %q, want %q", c.name, i, got, dev)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CNI ADD/DEL on a real igbvf VF (%s), %d rounds each after a warm-up round, alternating, QEMU TCG:\n", vf, rounds)
	fmt.Fprintf(&b, "%-16s %10s %10s %10s %10s %10s\n", "plugin", "ADD p50", "ADD p90", "DEL p50", "DEL p90", "ADD+DEL/hd")
	base := quantile(add["host-device"], 0.5) + quantile(del["host-device"], 0.5)
	for _, c := range confs {
		a50, d50 := quantile(add[c.name], 0.5), quantile(del[c.name], 0.5)
		fmt.Fprintf(&b, "%-16s %10s %10s %10s %10s %10.2f\n", c.name, a50.Round(time.Millisecond), quantile(add[c.name], 0.9).Round(time.Millisecond),
			d50.Round(time.Millisecond), quantile(del[c.name], 0.9).Round(time.Millisecond), float64(a50+d50)/float64(base))
	}
	t.Log("\n" + b.String())
	_ = os.WriteFile(filepath.Join(os.Getenv("RAILYARD_VM_RESULTS"), "cni-addel.txt"), []byte(b.String()), 0o644)
}
