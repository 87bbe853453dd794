//go:build e2e

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/test/e2e/framework"
	"github.com/railyard-io/railyard/test/multus"
)

// The install guide's network with Multus (docs/install.md): the chart
// creates the RoCE NetworkAttachmentDefinition in its own namespace
// (networks.create=true), and a pod in another namespace asks for it as
// railyard-system/railyard-rdma-pf. Multus names that delegate
// "railyard-system/railyard-rdma-pf", so its device-info file is
// railyard-system-railyard-rdma-pf-<sandbox>_net1, which the config's name
// alone never gives (issue #36: every sandbox failed).
const (
	multusNAD  = "railyard-rdma-pf"
	multusRail = 3 // rails 0 and 1: the rails test and the upgrade; 2: uninstall
	multusPod  = "multus-a"
)

// nadCRD is the NetworkAttachmentDefinition CRD Multus's deployment
// installs (group k8s.cni.cncf.io, v1, spec.config a string).
const nadCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: network-attachment-definitions.k8s.cni.cncf.io
spec:
  group: k8s.cni.cncf.io
  scope: Namespaced
  names:
    plural: network-attachment-definitions
    singular: network-attachment-definition
    kind: NetworkAttachmentDefinition
    shortNames: [net-attach-def]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              config:
                type: string
`

// withChartNetworks installs the NAD CRD and sets vals so the chart
// creates the RoCE network as the install guide does, on rail multusRail's
// PF pool, with this cluster's railyard-cni settings (its fake machine's
// sysfs, no RDMA subsystem) and whereabouts on the rail's subnet.
func withChartNetworks(ctx context.Context, t *testing.T, c *framework.MultiCluster, vals map[string]any) {
	t.Helper()
	if out, err := kubectl(ctx, c, nadCRD, "apply", "-f", "-"); err != nil {
		t.Fatalf("NAD CRD: %v\n%s", err, out)
	}
	if out, err := kubectl(ctx, c, "", "wait", "--for", "condition=established", "--timeout", "60s", "crd/network-attachment-definitions.k8s.cni.cncf.io"); err != nil {
		t.Fatalf("NAD CRD established: %v\n%s", err, out)
	}
	r := c.Info.Rails[multusRail]
	vals["networks"] = map[string]any{
		"create": true,
		"roce": map[string]any{
			"enabled": true, "name": multusNAD, "resourceName": string(railPool(multusRail)),
			"vlan": 0, "mtu": 1500, "rdma": false,
			"ipam": map[string]any{
				"type": "whereabouts", "range": r.Subnet, "exclude": []string{r.Spine + "/32"},
				"configuration_path": c.Info.WhereaboutsConfig,
			},
			"config": map[string]any{"sysfsRoot": filepath.Join(c.Info.MachineDir, "sysfs")},
		},
		"infiniband": map[string]any{"enabled": false},
	}
}

// installMultus puts the Multus stand-in (test/multus: this test binary
// under multus.BinaryName) into every GPU node's CNI bin dir and a network
// running it into its containerd's CNI conf dir, after the pod network and
// the rails' networks; removed at cleanup.
func installMultus(t *testing.T, c *framework.MultiCluster) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Info.GPUNodes() {
		bin := filepath.Join(n.CNIBinDir, multus.BinaryName)
		if err := os.Link(self, bin); err != nil {
			out, cerr := exec.Command("cp", "-f", self, bin).CombinedOutput()
			if cerr != nil {
				t.Fatalf("%s: %v %s", bin, cerr, out)
			}
		}
		conf, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "multus", "plugins": []any{map[string]any{
			"type": multus.BinaryName, "kubeconfig": c.Kubeconfig,
			"podResourcesSocket": "/var/lib/kubelet/pod-resources/kubelet.sock",
			"binDir":             c.Info.CNIBinDir, "cacheDir": filepath.Join(n.Dir, "multus-cache"),
		}}})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(n.CNIConfDir, "90-multus.conflist")
		if err := os.WriteFile(p, conf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(p); _ = os.Remove(bin) })
	}
	// containerd reloads its CNI configuration on the directory's events.
	time.Sleep(2 * time.Second)
	t.Cleanup(func() { time.Sleep(2 * time.Second) })
}

// startMultusPod runs a pod in "default" on node asking for the chart's
// network in railyard-system, and checks what Multus would report: a
// network-status entry named after the NAD with net1, an address on the
// rail, and the device-info document of the PF kubelet gave the pod.
func startMultusPod(ctx context.Context, t *testing.T, c *framework.MultiCluster, node framework.NodeInfo) *corev1.Pod {
	t.Helper()
	if len(node.Rails) <= multusRail {
		t.Fatalf("%s has %d rails; the Multus test uses rail %d", node.Name, len(node.Rails), multusRail)
	}
	pod := framework.WithResourceLimit(framework.BusyboxPod("default", multusPod, "sleep", "3600"), railPool(multusRail), 1)
	pod.Annotations = map[string]string{multus.NetworksAnnotation: releaseNS + "/" + multusNAD}
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node.Name}
	if _, err := c.CreatePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	p, err := c.WaitForPodPhase(ctx, "default", multusPod, corev1.PodRunning)
	if err != nil {
		t.Fatal(err)
	}
	var sts []multustest.NetStatus
	if err := json.Unmarshal([]byte(p.Annotations[multus.NetworkStatusAnnotation]), &sts); err != nil || len(sts) != 1 {
		t.Fatalf("network-status %q: %v", p.Annotations[multus.NetworkStatusAnnotation], err)
	}
	st := sts[0]
	if st.Name != releaseNS+"/"+multusNAD || st.Interface != "net1" || len(st.IPs) != 1 {
		t.Errorf("network-status entry %+v, want %s/%s on net1 with one address", st, releaseNS, multusNAD)
	}
	_, subnet, _ := net.ParseCIDR(c.Info.Rails[multusRail].Subnet)
	if len(st.IPs) == 1 && !subnet.Contains(net.ParseIP(st.IPs[0])) {
		t.Errorf("address %s is not on rail %d (%s)", st.IPs[0], multusRail, subnet)
	}
	var info struct {
		Type string `json:"type"`
		PCI  struct {
			Address string `json:"pci-address"`
		} `json:"pci"`
	}
	if err := json.Unmarshal(st.DeviceInfo, &info); err != nil {
		t.Fatalf("device-info in network-status %q: %v", st.DeviceInfo, err)
	}
	env, err := c.Exec(ctx, "default", multusPod, "main", "sh", "-c", "env | grep ^PCIDEVICE_")
	if err != nil {
		t.Fatalf("pod env: %v", err)
	}
	if info.Type != "pci" || info.PCI.Address == "" || !strings.Contains(env, "="+info.PCI.Address) {
		t.Errorf("device-info %s does not name the pod's device (%s)", st.DeviceInfo, strings.TrimSpace(env))
	}
	if got, err := c.Exec(ctx, "default", multusPod, "main", "ip", "-o", "-4", "addr", "show", "dev", "net1"); err != nil || len(st.IPs) == 1 && !strings.Contains(got, st.IPs[0]+"/") {
		t.Errorf("net1 in the pod: %q (%v), want %v", got, err, st.IPs)
	}
	return p
}

// deviceInfoFiles lists node's device-info files for CNI delegates (its
// /run is its own).
func deviceInfoFiles(t *testing.T, node framework.NodeInfo) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(node.Dir, "run", "k8s.cni.cncf.io", "devinfo", "cni", "*"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}

// checkMultusPodSurvived checks, after the upgrade, that the pod still
// runs the same container with its address, then deletes it and checks
// that everything is released: the rail's PF back in the node's
// namespace, no device-info file left.
func checkMultusPodSurvived(ctx context.Context, t *testing.T, c *framework.MultiCluster, node framework.NodeInfo, before *corev1.Pod) {
	t.Helper()
	after, err := c.Client.CoreV1().Pods("default").Get(ctx, multusPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.Phase != corev1.PodRunning || after.Status.ContainerStatuses[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("the pod changed across the upgrade: %s %+v", after.Status.Phase, after.Status.ContainerStatuses)
	}
	if diff := cmp.Diff(before.Annotations[multus.NetworkStatusAnnotation], after.Annotations[multus.NetworkStatusAnnotation]); diff != "" {
		t.Errorf("network-status changed across the upgrade (-before +after):\n%s", diff)
	}
	want := fmt.Sprintf("%s-%s-", releaseNS, multusNAD)
	if files := deviceInfoFiles(t, node); len(files) != 1 || !strings.HasPrefix(files[0], want) {
		t.Errorf("device-info files on %s: %v, want one named %s<sandbox>_net1", node.Name, files, want)
	}
	if err := c.DeletePod(ctx, "default", multusPod); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "rail PF back on "+node.Name, func(ctx context.Context) (bool, string) {
		out, err := exec.CommandContext(ctx, "nsenter", "--target", itoa(node.PID), "--net", "--", "ip", "-o", "link", "show", node.Rails[multusRail]).CombinedOutput()
		return err == nil, string(out)
	})
	if files := deviceInfoFiles(t, node); len(files) != 0 {
		t.Errorf("device-info files left on %s after the pod: %v", node.Name, files)
	}
}
