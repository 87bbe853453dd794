//go:build e2e

package latebinding

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/api/metadata"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const draPFRes = "railyard.io/e2e_dra_pf"

// TestDRAClaimNetdevMovedByRailyardCNI: a DRA pool of the fake tree's PFs
// (roce-8gpu-4nic) served by railyard-agent's kubelet plugin, a stand-in
// GPU DRA driver, and containerd v2's second CNI network whose only
// plugin is railyard-cni naming the DRA pool by resourceName. A pod with
// no claim starts and gets nothing from that network. A pod's claim asks
// for the GPU at 0000:85:00.0 and a PF on the same pcieRoot; the real
// scheduler allocates and reserves it, the real kubelet prepares it (the
// agent records the pod from status.reservedFor and publishes the DRA
// view) before it creates the sandbox, whose CNI ADD moves the claimed
// PF's netdev into the pod as eth1 with a host-local address: read from
// inside the container (its MAC is the PF netdev's), gone from the host.
// Deleting the pod runs DEL (the netdev back on the host under its name)
// before the kubelet unprepares the claim (checkpoint, spec and view
// emptied). Faked: the sysfs tree, the PF netdevs (veths named like the
// PFs: no RDMA subsystem here, so "rdma": false), the device nodes, the
// GPU driver and the resourceclaim controller (stand-ins, named so).
func TestDRAClaimNetdevMovedByRailyardCNI(t *testing.T) {
	c := suite.Cluster(t)
	netnstest.Require(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	n := newNode(t, c, "pf")
	stateDir := writeDRAConfig(ctx, t, c, n, "pf", draPFRes)
	viewDir := filepath.Join(stateDir, "binding") // the agent's binding directory

	// Every PF's netdev on the host, as a veth named like it.
	peer := netnstest.NewNetns(t, "drapeer")
	netdevOf, macOf := map[string]string{}, map[string]string{}
	for _, nic := range n.topo.NICs {
		netnstest.NewVeth(t, nic.Netdev, peer)
		l, err := netops.Linux{}.Link(ctx, netops.Host, nic.Netdev)
		if err != nil {
			t.Fatal(err)
		}
		netdevOf[nic.PCI], macOf[nic.PCI] = nic.Netdev, l.MAC.String()
	}
	installNetwork(t, c, n, "rdma-dra", draPFRes, viewDir, "10.58.0.0/24")

	gpu, err := framework.StartStandinGPUDRA(ctx, c.Client, c.NodeName, c.KubeletRootDir, c.CDISpecDir, n.topo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gpu.Stop)
	startDRAAgent(t, c, n)
	t.Cleanup(func() { _ = c.StopHelper("railyard-agent", 10*time.Second) })
	roots := waitDRASlices(ctx, t, c, len(n.topo.NICs), len(n.topo.GPUs))

	// A pod without a claim: the network attaches nothing, the pod starts.
	plain := framework.BusyboxPod("default", "dra-cni-plain", "sh", "-c", "sleep 3600")
	if _, err := c.CreatePod(ctx, plain); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(framework.Context(t, time.Minute), "default", plain.Name) })
	if _, err := c.WaitForPodPhase(ctx, "default", plain.Name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	if links, err := c.Exec(ctx, "default", plain.Name, "main", "ip", "-o", "link"); err != nil || strings.Contains(links, "eth1") {
		t.Fatalf("the pod without a claim has links %q (%v): want no eth1", links, err)
	}
	for pci, dev := range netdevOf {
		if err := exec.Command("ip", "link", "show", dev).Run(); err != nil {
			t.Fatalf("%s (PF %s) left the host for a pod without a claim: %v", dev, pci, err)
		}
	}
	if err := c.DeletePod(ctx, "default", plain.Name); err != nil {
		t.Fatal(err)
	}

	tmpl := createGPUNICTemplate(ctx, t, c, "gpu-pf", "0000:85:00.0")
	p := framework.BusyboxPod("default", "dra-cni-pf", "sh", "-c", "sleep 3600")
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu-nic", ResourceClaimTemplateName: ptr.To(tmpl.Name)}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu-nic"}}
	created := time.Now()
	pod, err := c.CreatePod(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeletePod(framework.Context(t, time.Minute), "default", p.Name) })
	claim, err := claimForPod(ctx, c, pod, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteClaim(context.Background(), c, "default", claim.Name) })
	if _, err := c.WaitForPodPhase(ctx, "default", p.Name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod with a GPU + PF claim Running %v after it was created", time.Since(created).Round(10*time.Millisecond))

	gpuDev, nicDev := allocatedGPUAndNIC(ctx, t, c, claim.Name)
	pf, err := dra.PCIAddress(nicDev)
	if err != nil || gpuDev != "gpu-4" || netdevOf[pf] == "" {
		t.Fatalf("allocated %s and %s (%v): want gpu-4 and a PF of the node", gpuDev, nicDev, err)
	}
	if gr, nr := roots[gpustandin.DriverName+"/"+gpuDev], roots[dra.DriverName+"/"+nicDev]; gr == "" || gr != nr {
		t.Fatalf("GPU %s on pcieRoot %q, PF %s on %q: want one root", gpuDev, gr, pf, nr)
	}

	// The agent recorded the pod from the claim's reservedFor.
	v, err := draview.Read(viewDir)
	if err != nil {
		t.Fatal(err)
	}
	held := v.PodDevices(draview.PodRef{Namespace: "default", Name: p.Name, UID: string(pod.UID)}, draPFRes)
	if len(held) != 1 || held[0].PCI != pf || held[0].Claim.UID != string(claim.UID) {
		t.Fatalf("DRA view %+v: want the pod's claim %s holding %s", v, claim.UID, pf)
	}

	// Inside the container: eth1 is the claimed PF's netdev, addressed.
	mac, err := c.Exec(ctx, "default", p.Name, "main", "cat", "/sys/class/net/eth1/address")
	if err != nil || strings.TrimSpace(mac) != macOf[pf] {
		t.Fatalf("eth1 in the container has MAC %q (%v), want %s (%s, PF %s)", mac, err, macOf[pf], netdevOf[pf], pf)
	}
	addr, err := c.Exec(ctx, "default", p.Name, "main", "ip", "-o", "-4", "addr", "show", "dev", "eth1")
	if err != nil || !strings.Contains(addr, "10.58.0.") {
		t.Fatalf("eth1 in the container: %q (%v), want an address from 10.58.0.0/24", addr, err)
	}
	// The claim's status says where its device went (KEP-4817
	// networkData, written by the agent from railyard-cni's record), as
	// the real API server validated and stored it.
	var entry *resourceapi.AllocatedDeviceStatus
	for end := time.Now().Add(30 * time.Second); entry == nil; time.Sleep(200 * time.Millisecond) {
		got, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range got.Status.Devices {
			if d.Driver == dra.DriverName && d.Device == nicDev {
				entry = &got.Status.Devices[i]
			}
		}
		if entry == nil && time.Now().After(end) {
			t.Fatalf("claim %s: no status.devices entry for %s 30s after the pod ran: %+v", claim.Name, nicDev, got.Status.Devices)
		}
	}
	if nd := entry.NetworkData; nd == nil || nd.InterfaceName != "eth1" || nd.HardwareAddress != macOf[pf] || len(nd.IPs) != 1 || !strings.HasPrefix(nd.IPs[0], "10.58.0.") ||
		len(entry.Conditions) != 1 || entry.Conditions[0].Type != draplugin.ConditionReady || entry.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("claim %s status.devices entry %+v (networkData %+v): want eth1, MAC %s, an address from 10.58.0.0/24, Ready", claim.Name, entry, entry.NetworkData, macOf[pf])
	} else {
		t.Logf("claim status.devices: %s %v %s, %s=%s", nd.InterfaceName, nd.IPs, nd.HardwareAddress, entry.Conditions[0].Type, entry.Conditions[0].Status)
	}
	// KEP-5304: the container has its NIC's metadata file (mounted by
	// the kubelet plugin helper's CDI spec), with the attributes the
	// device was published with.
	metaPath := metadata.ResourceClaimTemplateFilePath(dra.DriverName, "gpu-nic", "*")
	meta, err := c.Exec(ctx, "default", p.Name, "main", "sh", "-c", "cat "+metaPath)
	if err != nil || !strings.Contains(meta, `"railyard.io/rdmaDevice"`) || !strings.Contains(meta, pf) {
		t.Errorf("metadata file %s in the container: %q (%v): want the NIC's attributes (PCI address %s)", metaPath, meta, err, pf)
	}
	for pci, dev := range netdevOf {
		err := exec.Command("ip", "link", "show", dev).Run()
		if pci == pf && err == nil {
			t.Errorf("%s (the claimed PF %s) is still on the host", dev, pci)
		}
		if pci != pf && err != nil {
			t.Errorf("%s (PF %s, not claimed) left the host: %v", dev, pci, err)
		}
	}

	// Deleting the pod: DEL returns the netdev under its name, then the
	// kubelet unprepares the claim.
	if err := c.DeletePod(ctx, "default", p.Name); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	for ; ; time.Sleep(200 * time.Millisecond) {
		l, lerr := netops.Linux{}.Link(ctx, netops.Host, netdevOf[pf])
		_, serr := os.Stat(draplugin.SpecPath(c.CDISpecDir, claim.UID))
		v, verr := draview.Read(viewDir)
		if lerr == nil && l.MAC.String() == macOf[pf] && os.IsNotExist(serr) && len(preparedClaims(t, stateDir)) == 0 && verr == nil && len(v.Claims) == 0 {
			break
		}
		if time.Since(deleted) > time.Minute {
			t.Fatalf("a minute after the pod's deletion: netdev %s %+v (%v), spec %v, checkpoint %v, view %+v (%v)",
				netdevOf[pf], l, lerr, serr, preparedClaims(t, stateDir), v, verr)
		}
	}
	// DeletePod waits for the pod object to go, which the kubelet allows
	// after DEL and Unprepare: both are usually done by then (+0s).
	t.Logf("netdev %s back on the host and the claim unprepared +%v after the pod object was gone; test %v",
		netdevOf[pf], time.Since(deleted).Round(10*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
}

// waitDRASlices waits until the node's slices hold nics devices of
// Railyard's driver and gpus of the stand-in, and returns every device's
// pcieRoot by "<driver>/<device>".
func waitDRASlices(ctx context.Context, t *testing.T, c *framework.Cluster, nics, gpus int) map[string]string {
	t.Helper()
	for end := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		list, err := c.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		count, roots := map[string]int{}, map[string]string{}
		for _, s := range list.Items {
			count[s.Spec.Driver] += len(s.Spec.Devices)
			for _, d := range s.Spec.Devices {
				if a, ok := d.Attributes[resourceapi.QualifiedName(dra.AttrPCIeRoot)]; ok && a.StringValue != nil {
					roots[s.Spec.Driver+"/"+d.Name] = *a.StringValue
				}
			}
		}
		if count[dra.DriverName] == nics && count[gpustandin.DriverName] == gpus {
			return roots
		}
		if time.Now().After(end) {
			t.Fatalf("slices hold %v, want %d PFs and %d GPUs", count, nics, gpus)
		}
	}
}
