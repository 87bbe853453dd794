package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/cli"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/internal/nodesetup"
	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// nodeApply runs `railyard node apply --policy FILE` in process and
// returns its output.
func nodeApply(t *testing.T, policy string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(f, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := cli.Run(ctx, []string{"node", "apply", "--policy", f}, iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	t.Logf("railyard node apply (%s):\n%s%s", strings.ReplaceAll(strings.TrimSpace(policy), "\n", "; "), out.String(), errOut.String())
	return out.String(), err
}

func policy(pf string, n int, macs string) string {
	return fmt.Sprintf("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- pciAddress: %q\n  numVFs: %d\n  macs: %s\n", pf, n, macs)
}

// The PF behind the PCIe switch: creating, keeping, refusing to remove VFs
// in use, and removing them, through railyard node apply on the real
// sriov_numvfs.
func TestNodeApplyCreatesAndRemovesVFsRealKernel(t *testing.T) {
	vmkernel.Require(t)
	pf := vmkernel.PFs(t)[1]
	vmkernel.SetNumVFs(t, pf.PCI, 0)
	t.Cleanup(func() { vmkernel.SetNumVFs(t, pf.PCI, 0) })

	out, err := nodeApply(t, policy(pf.PCI, 3, "keep"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "numVFs 0 -> 3") {
		t.Errorf("output %q: want the numVFs change", out)
	}
	vfs := vmkernel.VFs(t, pf.PCI)
	if n := vmkernel.NumVFs(t, pf.PCI); n != 3 || len(vfs) != 3 {
		t.Fatalf("sriov_numvfs %d, VFs %v: want 3", n, vfs)
	}
	for _, vf := range vfs {
		if drv := vmkernel.ReadAttr(t, vf, "uevent"); !strings.Contains(drv, "DRIVER=igbvf") {
			t.Errorf("VF %s not bound to igbvf: %s", vf, drv)
		}
	}
	out, err = nodeApply(t, policy(pf.PCI, 3, "keep"))
	if err != nil || strings.TrimSpace(out) != "no changes" {
		t.Errorf("second apply: %q, %v; want no changes", out, err)
	}

	// A VF netdev in a pod's namespace is a VF in use.
	pod := netnstest.NewNetns(t, "nodepod")
	dev := vmkernel.Netdev(t, vfs[1])
	netnstest.IP(t, "link", "set", dev, "netns", filepath.Base(pod))
	_, err = nodeApply(t, policy(pf.PCI, 1, "keep"))
	if err == nil || !strings.Contains(err.Error(), vfs[1]) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("apply removing a VF in use: %v", err)
	}
	if n := vmkernel.NumVFs(t, pf.PCI); n != 3 {
		t.Errorf("sriov_numvfs %d after a refused change, want 3", n)
	}
	netnstest.IP(t, "-n", filepath.Base(pod), "link", "set", dev, "netns", "1")

	if _, err := nodeApply(t, policy(pf.PCI, 0, "keep")); err != nil {
		t.Fatal(err)
	}
	if n := vmkernel.NumVFs(t, pf.PCI); n != 0 || len(vmkernel.VFs(t, pf.PCI)) != 0 {
		t.Errorf("sriov_numvfs %d after removing every VF", n)
	}
}

// Derived MACs are set through the PF, and the VF rebound so that its
// netdev takes them.
func TestNodeApplyDerivedMACsRealKernel(t *testing.T) {
	vmkernel.Require(t)
	pf := vmkernel.PFs(t)[1]
	vmkernel.SetNumVFs(t, pf.PCI, 0)
	t.Cleanup(func() { vmkernel.SetNumVFs(t, pf.PCI, 0) })
	if _, err := nodeApply(t, policy(pf.PCI, 2, "derived")); err != nil {
		t.Fatal(err)
	}
	pfMAC, err := net.ParseMAC(vmkernel.ReadAttr(t, pf.PCI, "net/"+pf.Netdev+"/address"))
	if err != nil {
		t.Fatal(err)
	}
	var g [8]byte
	copy(g[:3], pfMAC[:3])
	g[3], g[4] = 0xff, 0xfe
	copy(g[5:], pfMAC[3:])
	for i, vf := range vmkernel.VFs(t, pf.PCI) {
		want := nodesetup.DeriveMAC(g, i)
		a, err := netops.Linux{}.VFAddresses(ctx, pf.Netdev, i)
		if err != nil || a.MAC.String() != want.String() {
			t.Errorf("VF %d MAC through the PF %s (%v), want %s", i, a.MAC, err, want)
		}
		if drv := vmkernel.ReadAttr(t, vf, "uevent"); !strings.Contains(drv, "DRIVER=igbvf") {
			t.Errorf("VF %s not bound to igbvf after apply: %s", vf, drv)
			continue
		}
		if got := vmkernel.ReadAttr(t, vf, "net/"+vmkernel.Netdev(t, vf)+"/address"); got != want.String() {
			t.Errorf("VF %d netdev MAC %s, want %s", i, got, want)
		}
	}
	out, err := nodeApply(t, policy(pf.PCI, 2, "derived"))
	if err != nil || strings.TrimSpace(out) != "no changes" {
		t.Errorf("second apply: %q, %v; want no changes", out, err)
	}
}

// failingSRIOV fails the k-th SR-IOV change, as a node setup process that
// dies there would leave things.
type failingSRIOV struct {
	nodesetup.SRIOV
	n, k int
}

var errInjected = errors.New("injected failure")

func (f *failingSRIOV) SetNumVFs(ctx context.Context, pf string, n int) error {
	if f.n++; f.n == f.k {
		return errInjected
	}
	return f.SRIOV.SetNumVFs(ctx, pf, n)
}

func (f *failingSRIOV) Bind(ctx context.Context, addr, driver string) error {
	if f.n++; f.n == f.k {
		return errInjected
	}
	return f.SRIOV.Bind(ctx, addr, driver)
}

// A run that fails after removing the VFs (2 -> 0 done, 0 -> 4 not) is
// completed by the next run.
func TestNodeApplyRecoversFromAFailedStepRealKernel(t *testing.T) {
	vmkernel.Require(t)
	pf := vmkernel.PFs(t)[1]
	vmkernel.SetNumVFs(t, pf.PCI, 2)
	t.Cleanup(func() { vmkernel.SetNumVFs(t, pf.PCI, 0) })
	fs := sysfs.New("/sys")
	p, err := v1alpha1.Parse([]byte(policy(pf.PCI, 4, "keep")))
	if err != nil {
		t.Fatal(err)
	}
	a := &nodesetup.Applier{FS: fs, SRIOV: &failingSRIOV{SRIOV: netops.SRIOVSysfs{}, k: 2}, VF: netops.Linux{},
		Usage: []nodesetup.UsageSource{nodesetup.SysfsUsage{FS: fs}}}
	if _, err := a.Apply(ctx, p); !errors.Is(err, errInjected) {
		t.Fatalf("apply with the second step failing: %v", err)
	}
	if n := vmkernel.NumVFs(t, pf.PCI); n != 0 {
		t.Fatalf("sriov_numvfs %d after failing at 0 -> 4, want 0", n)
	}
	a.SRIOV = netops.SRIOVSysfs{}
	res, err := a.Apply(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].String() != pf.PCI+": numVFs 0 -> 4" {
		t.Errorf("changes %v, want only numVFs 0 -> 4", res.Changes)
	}
	if n := vmkernel.NumVFs(t, pf.PCI); n != 4 || len(vmkernel.VFs(t, pf.PCI)) != 4 {
		t.Errorf("sriov_numvfs %d, want 4", n)
	}
}
