//go:build linux

package cni

// RealRDMA: the plugin against the real RDMA subsystem of the VM of `make
// vmtest` (Soft-RoCE, rdma_rxe). rxe devices have no PCI parent, so a small
// fake sysfs maps a PCI address to a veth (the netdev) and a real rxe
// device (the RDMA device); netops.Linux makes every call for real. Skipped
// outside the VM.

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/test/vm/vmkernel"
)

// The kernel refuses to move a rxe device into a namespace ("operation not
// supported"): ADD fails with an error that says so and names the device,
// and leaves the netdev on the host as it was, with no record.
func TestAddWhenKernelRefusesRDMAMoveRealRDMA(t *testing.T) {
	vmkernel.Require(t)
	vmkernel.Modprobe(t, "rdma_rxe", "ib_uverbs")
	vmkernel.SetRDMANetnsMode(t, "exclusive")
	t.Cleanup(func() { vmkernel.SetRDMANetnsMode(t, "shared") })
	w := newRealWorld(t)
	under, peer := netnstest.Name("rxu"), netnstest.Name("rxp")
	netnstest.IP(t, "link", "add", under, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", under).Run() })
	netnstest.IP(t, "link", "set", under, "up")
	rdma := "rxe_" + under[len(under)-4:]
	vmkernel.Run(t, "rdma", "link", "add", rdma, "type", "rxe", "netdev", under)
	t.Cleanup(func() { _ = exec.Command("rdma", "link", "del", rdma).Run() })
	must(t, (&sysfstest.Tree{Root: w.sysfs}).AddRDMA(vethPCI, rdma))

	conf := []byte(fmt.Sprintf(`{"cniVersion":"1.1.0","name":"rdma-net","type":"railyard-cni",
		"deviceID":%q,"rdma":true,"ipam":{"type":"fake-ipam"},
		"stateDir":%q,"sysfsRoot":%q,"lockTimeout":"1s"}`, vethPCI, w.stateDir, w.sysfs))
	p := w.plugin(netops.Linux{})
	_, err := p.Add(ctx, args("c1", w.pod, "net1", conf))
	t.Logf("ADD: %v (CNI code %d)", err, Code(err))
	if err == nil || !strings.Contains(err.Error(), rdma) || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("ADD with a rxe device: %v, want the kernel's refusal naming %s", err, rdma)
	}
	w.assertPristine()
	if in, err := (netops.Linux{}).RDMADeviceIn(ctx, netops.Host, rdma); err != nil || !in {
		t.Errorf("%s on the host after the failed ADD: %v, %v", rdma, in, err)
	}
	must(t, p.Del(ctx, args("c1", w.pod, "net1", conf)))
}
