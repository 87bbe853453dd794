package vmkernel

import (
	"context"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvVM is set to "1" by the VM's init (hack/vm/init) for the job it runs.
const EnvVM = "RAILYARD_VM"

// sysBus is where the VM's PCI devices are; the tests read the real /sys.
const sysBus = "/sys/bus/pci/devices"

// Require skips the test unless it runs inside the VM of make vmtest.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvVM) != "1" {
		t.Skip("real-kernel test: runs only inside the QEMU VM of `make vmtest` (hack/vm/test.sh), which has real SR-IOV (igb) and RDMA (rdma_rxe); " + EnvVM + " is not set")
	}
	if os.Geteuid() != 0 {
		t.Skip("real-kernel test: needs root")
	}
}

// Modprobe loads kernel modules (the VM autoloads too, but tests that need
// one say so).
func Modprobe(t testing.TB, mods ...string) {
	t.Helper()
	for _, m := range mods {
		Run(t, "modprobe", m)
	}
}

// Run runs a command and fails the test on error; it returns the output.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// PF is an SR-IOV physical function of the VM.
type PF struct {
	PCI    string // 0000:01:00.0
	Netdev string // eth0
	Path   string // the resolved device directory under /sys/devices
}

// PFs returns the VM's igb PFs, brought up, in address order (hack/vm/run.sh makes two:
// 0000:01:00.0 under a root port, 0000:23:00.0 behind a PCIe switch).
func PFs(t testing.TB) []PF {
	t.Helper()
	Modprobe(t, "igb", "igbvf")
	ents, err := os.ReadDir(sysBus)
	if err != nil {
		t.Fatal(err)
	}
	var out []PF
	for _, e := range ents {
		dir := filepath.Join(sysBus, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "sriov_totalvfs")); err != nil {
			continue
		}
		if drv, _ := os.Readlink(filepath.Join(dir, "driver")); filepath.Base(drv) != "igb" {
			continue
		}
		p, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		pf := PF{PCI: e.Name(), Netdev: waitNetdev(t, e.Name()), Path: p}
		// Up, as on a node: igb handles its VFs' mailbox (a VF setting its
		// own MAC, a VF's reset) only while the PF is open.
		Run(t, "ip", "link", "set", pf.Netdev, "up")
		out = append(out, pf)
	}
	if len(out) == 0 {
		t.Fatal("no igb PF in the VM (hack/vm/run.sh makes two)")
	}
	slices.SortFunc(out, func(a, b PF) int { return strings.Compare(a.PCI, b.PCI) })
	return out
}

// FirstPF is PFs(t)[0], the PF under the root port.
func FirstPF(t testing.TB) PF { return PFs(t)[0] }

// ReadAttr reads a sysfs attribute of a PCI device, trimmed.
func ReadAttr(t testing.TB, pci, attr string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sysBus, pci, attr))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// NumVFs is the PF's sriov_numvfs.
func NumVFs(t testing.TB, pf string) int {
	t.Helper()
	n, err := strconv.Atoi(ReadAttr(t, pf, "sriov_numvfs"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// SetNumVFs writes sriov_numvfs (through 0 when changing a non-zero count,
// as the kernel requires) and waits for every VF's igbvf netdev.
func SetNumVFs(t testing.TB, pf string, n int) {
	t.Helper()
	cur := NumVFs(t, pf)
	if cur == n {
		return
	}
	write := func(v int) {
		if err := os.WriteFile(filepath.Join(sysBus, pf, "sriov_numvfs"), []byte(strconv.Itoa(v)), 0o644); err != nil {
			t.Fatalf("sriov_numvfs of %s = %d: %v", pf, v, err)
		}
	}
	if cur != 0 {
		write(0)
	}
	if n != 0 {
		write(n)
		for _, vf := range VFs(t, pf) {
			waitNetdev(t, vf)
		}
	}
}

// EnsureVFs makes the PF have n VFs (left in place for the next test: VF
// creation is slow under emulation) and returns their addresses in VF order.
func EnsureVFs(t testing.TB, pf string, n int) []string {
	t.Helper()
	SetNumVFs(t, pf, n)
	return VFs(t, pf)
}

// VFs returns the PF's VF addresses from its virtfnN links, in VF order.
func VFs(t testing.TB, pf string) []string {
	t.Helper()
	var out []string
	for i := 0; ; i++ {
		l, err := os.Readlink(filepath.Join(sysBus, pf, "virtfn"+strconv.Itoa(i)))
		if err != nil {
			return out
		}
		out = append(out, filepath.Base(l))
	}
}

// Netdev returns the netdev of a PCI function in the caller's namespace.
func Netdev(t testing.TB, pci string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(sysBus, pci, "net"))
	if err != nil || len(ents) == 0 {
		t.Fatalf("no netdev for %s: %v", pci, err)
	}
	return ents[0].Name()
}

func waitNetdev(t testing.TB, pci string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ents, err := os.ReadDir(filepath.Join(sysBus, pci, "net"))
		if err == nil && len(ents) > 0 {
			return ents[0].Name()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no netdev for %s after 20 s: %v", pci, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ResetVF puts VF vf of pf back to a new VF's settings through the PF
// (ip link): no VLAN, spoofchk on, trust off, no administrative MAC.
func ResetVF(t testing.TB, pf string, vf int) {
	t.Helper()
	n := strconv.Itoa(vf)
	Run(t, "ip", "link", "set", pf, "vf", n, "vlan", "0", "qos", "0")
	Run(t, "ip", "link", "set", pf, "vf", n, "spoofchk", "on")
	Run(t, "ip", "link", "set", pf, "vf", n, "trust", "off")
	Run(t, "ip", "link", "set", pf, "vf", n, "mac", "00:00:00:00:00:00")
}

// SetRDMANetnsMode switches the RDMA subsystem netns mode ("exclusive" or "shared"). The
// kernel refuses while other network namespaces exist (EBUSY), and a
// deleted namespace goes away asynchronously: retry for a while.
func SetRDMANetnsMode(t testing.TB, mode string) {
	t.Helper()
	Modprobe(t, "ib_core")
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := exec.CommandContext(context.Background(), "rdma", "system", "set", "netns", mode).CombinedOutput()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rdma system set netns %s: %v: %s (network namespaces besides the host's, which make the kernel refuse: %s)", mode, err, strings.TrimSpace(string(out)), otherNetns())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// otherNetns describes the network namespaces besides this process's that
// are still alive: named ones (ip netns) and those of other processes. A
// namespace no process or mount holds any more may still be in the
// kernel's asynchronous clean-up, and is not listed.
func otherNetns() string {
	named, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		named = []byte("ip netns list: " + err.Error())
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	held := map[string][]string{}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		ns, err := os.Readlink(p)
		if err != nil || ns == own {
			continue
		}
		pid := strings.Split(p, "/")[2]
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		held[ns] = append(held[ns], pid+" "+strings.TrimSpace(string(comm)))
	}
	return fmt.Sprintf("named: [%s]; held by processes: %v", strings.Join(strings.Fields(string(named)), " "), held)
}
