//go:build e2e

package latebinding

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/test/e2e/framework"
)

const (
	draRes = "railyard.io/e2e_dra"
	draEnv = "PCIDEVICE_RAILYARD_IO_E2E_DRA"
)

// startDRAAgent starts railyard-agent with a DRA pool of the fake tree's
// VFs (admin kubeconfig: the chart's ClusterRole is tested in
// internal/helmchart, not here).
func startDRAAgent(t *testing.T, c *framework.Cluster, n *node) {
	t.Helper()
	bin, err := c.ProjectBin("railyard-agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartHelper("railyard-agent", bin, "--config", n.config, "--sysfs", n.sysfs, "--dev-root", n.dev,
		"--plugin-dir", framework.DevicePluginDir, "--pod-resources-socket", c.PodResourcesSocket(),
		"--devinfo-dir", filepath.Join(n.dir, "devinfo"), "--metrics-addr", "0", "--log-level", "debug",
		"--kubeconfig", c.Kubeconfig,
		"--dra-plugin-dir", filepath.Join(c.KubeletRootDir, "plugins", dra.DriverName),
		"--plugins-registry-dir", filepath.Join(c.KubeletRootDir, "plugins_registry")); err != nil {
		t.Fatal(err)
	}
}

// claimForPod is a STAND-IN for kube-controller-manager's resourceclaim
// controller, which this cluster does not run: it makes the pod's claim
// from its template (owned by the pod, annotated with the pod's claim
// name) and records it in the pod's status, as the controller does; the
// scheduler then allocates it.
func claimForPod(ctx context.Context, c *framework.Cluster, pod *corev1.Pod, tmpl *resourceapi.ResourceClaimTemplate) (*resourceapi.ResourceClaim, error) {
	pc := pod.Spec.ResourceClaims[0]
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name + "-" + pc.Name,
			Annotations: map[string]string{"resource.kubernetes.io/pod-claim-name": pc.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: tmpl.Spec.Spec,
	}
	claim, err := c.Client.ResourceV1().ResourceClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ { // the scheduler may update the pod's status meanwhile
		cur, err := c.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		cur.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: pc.Name, ResourceClaimName: &claim.Name}}
		_, err = c.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err == nil {
			return claim, nil
		}
		if !apierrors.IsConflict(err) || i > 10 {
			return nil, err
		}
	}
}

// deleteClaim removes a claim whose pod is gone: what the resourceclaim
// controller would do (reservation, allocation and its finalizer off).
func deleteClaim(ctx context.Context, c *framework.Cluster, ns, name string) error {
	rc := c.Client.ResourceV1().ResourceClaims(ns)
	claim, err := rc.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	claim.Status = resourceapi.ResourceClaimStatus{}
	if claim, err = rc.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return err
	}
	claim.Finalizers = nil
	if _, err = rc.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return rc.Delete(ctx, name, metav1.DeleteOptions{})
}

// preparedClaims reads the agent's checkpoint: the UIDs it holds.
func preparedClaims(t *testing.T, stateDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, draplugin.CheckpointFile))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Claims []struct {
			UID string `json:"uid"`
		} `json:"claims"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range doc.Claims {
		out = append(out, c.UID)
	}
	return out
}

// TestDRAGPUAndNICOnOneRootWithRealSchedulerStandInGPUDRA: railyard-agent publishes a
// DRA pool of the fake tree's VFs (roce-8gpu-4nic, 2 VFs per NIC) through
// the real kubelet's plugin registration, next to a stand-in GPU DRA
// driver; a pod's ResourceClaimTemplate asks for the GPU at 0000:85:00.0
// (host bridge pci0000:80) and a NIC with matchAttribute
// resource.kubernetes.io/pcieRoot. The real scheduler allocates the first
// VF under pci0000:80 (first fit alone would take 0000:05:00.1 under
// pci0000:00), the real kubelet has both drivers prepare the claim, and
// containerd v2 injects their CDI devices: the container sees exactly its
// VF's uverbs node and rdma_cm, its PCIDEVICE_* and NCCL_IB_HCA, and its
// GPU's variable. The agent restarts while the pod runs (the claim stays
// prepared: checkpoint) and unprepares the claim when the pod is deleted.
// Faked: the sysfs tree, the device nodes (real char devices, no driver),
// the GPU driver and kube-controller-manager's claim controller (stand-ins,
// named so).
func TestDRAGPUAndNICOnOneRootWithRealSchedulerStandInGPUDRA(t *testing.T) {
	c := suite.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	n := newNode(t, c, "vf")
	stateDir := writeDRAConfig(ctx, t, c, n, "vf", draRes)
	gpu, err := framework.StartStandinGPUDRA(ctx, c.Client, c.NodeName, c.KubeletRootDir, c.CDISpecDir, n.topo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gpu.Stop)
	startDRAAgent(t, c, n)
	t.Cleanup(func() { _ = c.StopHelper("railyard-agent", 10*time.Second) })

	vfs := 0
	for _, nic := range n.topo.NICs {
		vfs += len(nic.VFs)
	}
	waitDRASlices(ctx, t, c, vfs, len(n.topo.GPUs))

	tmpl := createGPUNICTemplate(ctx, t, c, "gpu-nic", "0000:85:00.0")
	// A pod without claims first: the start time to compare with.
	plain := framework.BusyboxPod("default", "dra-baseline", "sh", "-c", "sleep 3600")
	began := time.Now()
	if _, err := c.CreatePod(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPodPhase(ctx, "default", plain.Name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	baseline := time.Since(began)
	if err := c.DeletePod(ctx, "default", plain.Name); err != nil {
		t.Fatal(err)
	}

	cmd := `echo NODES=$(ls /dev/infiniband | tr '\n' ' '); echo GPUS=$STANDIN_GPUS; echo VFS=$` + draEnv + `; echo HCA=$NCCL_IB_HCA; sleep 3600`
	p := framework.BusyboxPod("default", "dra-gpu-nic", "sh", "-c", cmd)
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu-nic", ResourceClaimTemplateName: ptr.To(tmpl.Name)}}
	p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu-nic"}}
	began = time.Now()
	pod, err := c.CreatePod(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	claim, err := claimForPod(ctx, c, pod, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteClaim(context.Background(), c, "default", claim.Name) })
	if _, err := c.WaitForPodPhase(ctx, "default", p.Name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod with a GPU + NIC claim Running %v after it was created (claim made by the test's stand-in controller); a pod without claims %v",
		time.Since(began).Round(10*time.Millisecond), baseline.Round(10*time.Millisecond))

	gpuDev, nicDev := allocatedGPUAndNIC(ctx, t, c, claim.Name)
	nicPCI, err := dra.PCIAddress(nicDev)
	if gpuDev != "gpu-4" || err != nil || nicPCI != "0000:84:00.1" {
		t.Fatalf("allocated %s and %s (%v), want gpu-4 (0000:85:00.0) and pci-0000-84-00-1: the first VF on host bridge pci0000:80", gpuDev, nicDev, err)
	}
	o := podOutput(ctx, t, c, p.Name)
	wantNodes := []string{"rdma_cm", n.uverbs[nicPCI]}
	slices.Sort(wantNodes)
	gotNodes := slices.Clone(o.nodes)
	slices.Sort(gotNodes)
	if !slices.Equal(gotNodes, wantNodes) || !slices.Equal(o.vfs, []string{nicPCI}) || o.hca != "="+n.rdma[nicPCI] || !slices.Equal(o.gpus, []string{"0000:85:00.0"}) {
		t.Fatalf("the container sees /dev/infiniband %v, %s=%v, NCCL_IB_HCA=%q, STANDIN_GPUS=%v; want %v, [%s], %q, [0000:85:00.0]",
			o.nodes, draEnv, o.vfs, o.hca, o.gpus, wantNodes, nicPCI, "="+n.rdma[nicPCI])
	}
	if got := preparedClaims(t, stateDir); !slices.Equal(got, []string{string(claim.UID)}) {
		t.Fatalf("checkpoint holds %v, want the pod's claim %s", got, claim.UID)
	}

	// The agent restarts while the pod runs: the claim stays prepared and
	// the slices stay published.
	if err := c.StopHelper("railyard-agent", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	startDRAAgent(t, c, n)
	waitDRASlices(ctx, t, c, vfs, len(n.topo.GPUs))
	if got := preparedClaims(t, stateDir); !slices.Equal(got, []string{string(claim.UID)}) {
		t.Fatalf("after the agent restart the checkpoint holds %v", got)
	}
	if _, err := os.Stat(draplugin.SpecPath(c.CDISpecDir, claim.UID)); err != nil {
		t.Fatalf("the claim's CDI spec after the agent restart: %v", err)
	}
	if _, err := c.WaitForPodPhase(ctx, "default", p.Name, corev1.PodRunning); err != nil {
		t.Fatal(err)
	}

	// Deleting the pod unprepares the claim in the restarted agent.
	if err := c.DeletePod(ctx, "default", p.Name); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	for {
		_, serr := os.Stat(draplugin.SpecPath(c.CDISpecDir, claim.UID))
		if os.IsNotExist(serr) && len(preparedClaims(t, stateDir)) == 0 {
			break
		}
		if time.Since(deleted) > time.Minute {
			t.Fatalf("claim not unprepared a minute after its pod was deleted: spec %v, checkpoint %v", serr, preparedClaims(t, stateDir))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("claim unprepared %v after its pod was deleted", time.Since(deleted).Round(10*time.Millisecond))
}

// writeDRAConfig writes the agent's configuration for the fake node: one
// pool (devices of kind, resource res) with delivery dra, its state in a
// directory of its own (returned); and creates the DeviceClasses of
// Railyard's driver and of the stand-in GPU driver.
func writeDRAConfig(ctx context.Context, t *testing.T, c *framework.Cluster, n *node, kind, res string) (stateDir string) {
	t.Helper()
	stateDir = filepath.Join(n.dir, "dra-state")
	cfg := fmt.Sprintf(`apiVersion: railyard.io/v1alpha1
kind: AgentConfig
nodeName: %s
resyncInterval: 5s
stateDir: %s
cdiSpecDir: %s
pools:
- name: %s
  deviceKind: %s
  delivery: dra
  selectors: {rdmaCapable: true}
`, c.NodeName, stateDir, c.CDISpecDir, res, kind)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dc := range []*resourceapi.DeviceClass{dra.DeviceClass(), gpustandin.DeviceClass()} {
		if _, err := c.Client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return stateDir
}

// createGPUNICTemplate creates a claim template named name asking for the
// stand-in GPU at gpuPCI and one device of Railyard's class on the same
// PCIe root (matchAttribute resource.kubernetes.io/pcieRoot).
func createGPUNICTemplate(ctx context.Context, t *testing.T, c *framework.Cluster, name, gpuPCI string) *resourceapi.ResourceClaimTemplate {
	t.Helper()
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{
				{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpustandin.DeviceClassName,
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
						Expression: `device.attributes["resource.kubernetes.io"].pciBusID == "` + gpuPCI + `"`}}}}},
				{Name: "nic", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: dra.DeviceClassName}},
			},
			Constraints: []resourceapi.DeviceConstraint{{Requests: []string{"gpu", "nic"}, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(dra.AttrPCIeRoot))}},
		}}},
	}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return tmpl
}

// allocatedGPUAndNIC returns the devices the scheduler allocated to claim
// name (in "default"): the stand-in GPU driver's and Railyard's.
func allocatedGPUAndNIC(ctx context.Context, t *testing.T, c *framework.Cluster, name string) (gpuDev, nicDev string) {
	t.Helper()
	claim, err := c.Client.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil || claim.Status.Allocation == nil {
		t.Fatalf("claim %s not allocated: %v", name, err)
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		switch r.Driver {
		case gpustandin.DriverName:
			gpuDev = r.Device
		case dra.DriverName:
			nicDev = r.Device
		}
	}
	return gpuDev, nicDev
}
