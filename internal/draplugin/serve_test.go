package draplugin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/railyard-io/railyard/internal/draplugin"
	"github.com/railyard-io/railyard/internal/draplugin/draplugintest"
	"github.com/railyard-io/railyard/internal/draview"
)

// The driver behind the real kubeletplugin helper, with a fake API
// server (client-go's fake clientset) and the kubelet played by a gRPC
// client on dra.sock (no kubelet in this test; test/e2e runs a real one):
// the helper writes the node's ResourceSlices, registers its socket, and
// NodePrepareResources / NodeUnprepareResources reach the driver with the
// claim the helper read from the API server.
func TestServeWithFakeKubeletAndAPIServer(t *testing.T) {
	n := newNode(t, "dgx-h100", 2)
	d := n.driver(t)
	dir, err := os.MkdirTemp("/tmp", "rydra") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	plugins, reg := filepath.Join(dir, "plugins"), filepath.Join(dir, "registry")
	for _, p := range []string{plugins, reg} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := claim(t, uidA, nic("0000:18:00.1", "nic0"))
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}},
		c,
	)
	draplugintest.DryRunSlices(client, draplugintest.Release135) // taints and consumable capacity dropped
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := draplugin.Serve(ctx, d, draplugin.ServeOptions{Client: client, PluginDataDir: plugins, RegistrarDir: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	if d.ServerFeatures().Taints {
		t.Error("unhealthy devices published tainted on a server that drops taints")
	}

	var devices int
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		devices = 0
		for _, s := range list.Items {
			if s.Spec.Driver != "rdma.railyard.io" || s.Spec.NodeName == nil || *s.Spec.NodeName != node || s.Spec.Pool.Name != node+"/rdma-vf" {
				t.Fatalf("slice %+v", s.Spec)
			}
			devices += len(s.Spec.Devices)
		}
		if devices == 24 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if devices != 24 {
		t.Fatalf("%d devices in the API server's slices, want 24", devices)
	}
	if _, err := os.Stat(filepath.Join(reg, "rdma.railyard.io-reg.sock")); err != nil {
		t.Errorf("no registration socket: %v", err)
	}

	conn, err := grpc.NewClient("unix://"+filepath.Join(plugins, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := drav1.NewDRAPluginClient(conn)
	req := []*drav1.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}
	prep, err := kubelet.NodePrepareResources(ctx, &drav1.NodePrepareResourcesRequest{Claims: req})
	if err != nil {
		t.Fatal(err)
	}
	got := prep.Claims[string(c.UID)]
	if got == nil || got.Error != "" || len(got.Devices) != 1 ||
		got.Devices[0].CdiDeviceIds[0] != "rdma.railyard.io/claim="+uidA+"-pci-0000-18-00-1" || got.Devices[0].PoolName != node+"/rdma-vf" {
		t.Fatalf("NodePrepareResources: %v", prep)
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); err != nil {
		t.Fatal(err)
	}
	// KEP-5304: the helper wrote the request's metadata file (the device's
	// published attributes) and a CDI spec mounting it, whose device the
	// container gets beside the claim's.
	metaFile := filepath.Join(plugins, "dra-device-metadata", c.Namespace+"_"+c.Name, "nic0", "metadata.json")
	if b, err := os.ReadFile(metaFile); err != nil || !strings.Contains(string(b), `"railyard.io/rdmaDevice"`) || strings.Contains(string(b), "networkData") {
		t.Errorf("metadata file at Prepare: %s (%v)", b, err)
	}
	prepared, err := os.Stat(metaFile)
	if err != nil {
		t.Fatal(err)
	}
	if ids := got.Devices[0].CdiDeviceIds; len(ids) != 2 {
		t.Errorf("CDI devices %v: want the claim's and the metadata's", ids)
	}
	// railyard-cni attached the device: the agent's status sync rewrites
	// the metadata with its interface in the pod.
	must(t, draview.WriteStatus(n.view, draview.DeviceStatus{ClaimUID: uidA, PCI: "0000:18:00.1", ContainerID: "0123456789ab", IfName: "net1", MAC: "02:11:22:33:44:55"}))
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(metaFile)
		if err == nil && strings.Contains(string(b), `"interfaceName": "net1"`) && strings.Contains(string(b), "02:11:22:33:44:55") {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("metadata file 20s after the status record: %s (%v)", b, err)
		}
	}
	// Containers bind-mount the file: the rewrite keeps its inode, so they
	// see it too (the helper's rename would leave them the deleted one).
	if updated, err := os.Stat(metaFile); err != nil || !os.SameFile(prepared, updated) {
		t.Errorf("the metadata file was replaced, not rewritten in place (%v)", err)
	}
	un, err := kubelet.NodeUnprepareResources(ctx, &drav1.NodeUnprepareResourcesRequest{Claims: req})
	if err != nil || un.Claims[string(c.UID)] == nil || un.Claims[string(c.UID)].Error != "" {
		t.Fatalf("NodeUnprepareResources: %v, %v", un, err)
	}
	if _, err := os.Stat(draplugin.SpecPath(n.cdi, c.UID)); !os.IsNotExist(err) {
		t.Errorf("spec after Unprepare: %v", err)
	}
	if len(d.Prepared()) != 0 {
		t.Errorf("prepared after Unprepare: %v", d.Prepared())
	}
}
