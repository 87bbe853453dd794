//go:build linux

package cni

// RealVF twins that run the same body as their FakeVF test (twin_test.go)
// on VF 0 (and VF 1) of the VM's first igb PF: every call is
// netops.Linux's. Where igb answers differently from the fake (which
// models mlx5), the test asserts the kernel's answer.

import (
	"os/exec"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

func TestAddRollbackWhenDeviceInfoCannotBeWrittenRealVF(t *testing.T) {
	checkAddRollbackWhenDeviceInfoCannotBeWritten(newVFWorld(t))
}

// /proc/self/ns/net is the test's own namespace: the host's.
func TestAddRefusesTheHostsOwnNetnsByIdentityRealVF(t *testing.T) {
	checkAddRefusesTheHostsOwnNetns(newVFWorld(t), "/proc/self/ns/net")
}

func TestRollbackMessageSaysWhatIsLeftRealVF(t *testing.T) {
	checkRollbackMessageSaysWhatIsLeft(newVFWorld(t))
}

func TestAddOnAMissingDeviceLeavesNoLockFileRealVF(t *testing.T) {
	checkAddOnAMissingDeviceLeavesNoLockFile(newVFWorld(t))
}

// The kernel refunds the VF netdev as dev%d when its pod name is taken on
// the host; DEL waits for it (namespaces die asynchronously) and finds it
// by its PCI function.
func TestDelAfterNetnsDeletedWithNameTakenRealVF(t *testing.T) {
	checkDelAfterNetnsDeletedWithNameTaken(newVFWorld(t))
}

// igbvf netdevs have no altname of their own; the kernel takes one added
// with `ip link property add`, which is what a udev rule does on a node.
func TestAltnameOfDeviceTakenInPodRealVF(t *testing.T) {
	w := newVFWorld(t)
	alt := netnstest.Name("alt")
	netnstest.IP(t, "link", "property", "add", "dev", w.dev, "altname", alt)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "property", "del", "dev", w.dev, "altname", alt).Run() })
	var err error
	w.orig, err = netops.Linux{}.Link(ctx, netops.Host, w.dev)
	must(t, err)
	checkAltnameOfDeviceTakenInPod(w, alt)
}

func TestMultusDelegateAddDelRealVF(t *testing.T) {
	checkMultusDelegateAddDel(newVFWorld(t))
}

func TestDelReleasesOnConfigsAddRejectsRealVF(t *testing.T) {
	checkDelReleasesOnConfigsAddRejects(t, func(t *testing.T) vfEnv { return newVFWorld(t) })
}

// An igb VF is Ethernet: every InfiniBand rule refuses it (or waits for
// ib-kubernetes) before the kernel is asked anything.
func TestInfiniBandRulesRealVF(t *testing.T) {
	checkInfiniBandRules(newVFWorld(t))
}

// igb has no VF GUIDs: the kernel answers "operation not supported"
// (TestIGBDriverAnswersRealVF). The plugin is shown the VF's netdev as an
// IPoIB one (ipoibView: only the address it reads is changed) so that it
// asks the kernel for the GUID: ADD fails with the kernel's answer and
// rolls back cleanly. This twin found the rollback retrying the GUID the
// kernel had refused and keeping the record for good.
func TestInfiniBandGUIDRefusedByIGBRealVF(t *testing.T) {
	w := newVFWorld(t)
	checkGUIDRefusedByTheDriver(w, ipoibView{Ops: netops.Linux{}, dev: w.dev})
}

// Fewer rounds than the fake's 20: each is two real ADDs and DELs under
// emulation.
func TestConcurrentAddDelOnOneDeviceNeverShareRealVF(t *testing.T) {
	checkConcurrentAddDelOnOneDeviceNeverShare(newVFWorld(t), 5)
}

func TestGCReleasesOnlyInvalidAttachmentsRealVF(t *testing.T) {
	checkGCReleasesOnlyInvalidAttachments(newVFWorld(t))
}

// Late binding on the VM's VFs: the binding store and its view (with the
// real VFs' PCI addresses), the CDI specs and the PodResources stand-in
// are files and Go values, the same as the fake's; the VFs are igb's.
func TestLateBindingMultusTokenRealVF(t *testing.T) {
	checkLateBindingMultusToken(newLateWorld(newVFWorld(t)))
}

func TestLateBindingByResourceNameRealVF(t *testing.T) {
	checkLateBindingByResourceName(newLateWorld(newVFWorld(t)))
}

func TestResourceNameOfAllocatedPoolRealVF(t *testing.T) {
	checkResourceNameOfAllocatedPool(newLateWorld(newVFWorld(t)))
}

func TestResourceNameNetworkOfAPodWithoutDevicesAttachesNothingRealVF(t *testing.T) {
	checkResourceNameNetworkOfAPodWithoutDevicesAttachesNothing(newLateWorld(newVFWorld(t)))
}

// A DRA claim's VFs on the VM's igb VFs: the DRA view is a file, as the
// fake's; igb VFs have no RDMA device, so only the netdevs move.
func TestDRAClaimNetdevsAttachInClaimOrderRealVF(t *testing.T) {
	checkDRAClaimNetdevsAttachInClaimOrder(newDRAWorld(newVFWorld(t)))
}

func TestDRANetworkOfAPodWithoutClaimAttachesNothingRealVF(t *testing.T) {
	checkDRANetworkOfAPodWithoutClaimAttachesNothing(newDRAWorld(newVFWorld(t)))
}

func TestDRADeviceOfASharedClaimAttachedElsewhereRealVF(t *testing.T) {
	checkDRADeviceOfASharedClaimAttachedElsewhere(newDRAWorld(newVFWorld(t)))
}
