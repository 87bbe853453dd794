package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/go-logr/logr"
	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/discovery"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/draplugin/draplugintest"
	"github.com/railyard-io/railyard/internal/draview"
	"github.com/railyard-io/railyard/internal/fakesysfs"
)

const draRes = "railyard.io/rdma_vf_dra"

// draConfig serves the VFs of two RoCE PFs of roce-8gpu-4nic through DRA
// and a third PF whole through the device plugin.
func draConfig(e *env, nodeName string) string {
	return `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
resyncInterval: 1h
portPollInterval: 100ms
nodeName: ` + nodeName + `
cdiSpecDir: ` + filepath.Join(e.dir, "cdi") + `
stateDir: ` + filepath.Join(e.dir, "state") + `
pools:
- name: ` + draRes + `
  deviceKind: vf
  delivery: dra
  selectors:
    pfNames: [enp5s0f0np0, enp12s0f0np0]
- name: railyard.io/rdma_pf
  deviceKind: pf
  policy: packed
  selectors:
    pfNames: [enp132s0f0np0]
`
}

// draArgs adds the DRA socket directories (short paths: unix sockets).
func (e *env) draArgs(config string) []string {
	return append(e.args(config), "--dra-plugin-dir", filepath.Join(e.dir, "plugins"), "--plugins-registry-dir", filepath.Join(e.dir, "registry"))
}

// startWithClient runs the agent as main does, with client-go's fake
// clientset as the API server (no API server in unit tests; test/e2e
// runs a real one).
func startWithClient(t *testing.T, args []string, kube *fake.Clientset) (*Agent, *syncBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &syncBuffer{}
	readyc := make(chan *Agent, 1)
	done := make(chan error, 1)
	go func() {
		done <- runWith(ctx, args, func(string) (string, bool) { return "", false }, log, discovery.Discover,
			func(a *Agent, _ net.Addr) { readyc <- a }, kube)
	}()
	select {
	case a := <-readyc:
		stop := func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		}
		return a, log, stop
	case err := <-done:
		cancel()
		t.Fatalf("agent exited: %v\n%s", err, log)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("agent not ready within 20s")
	}
	return nil, nil, nil
}

// sliceDevices counts the devices of the driver's slices in the fake API
// server, waiting until ok accepts the count.
func sliceDevices(t *testing.T, kube *fake.Clientset, what string, ok func(int) bool) int {
	t.Helper()
	n := -1
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		list, err := kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for _, s := range list.Items {
			if s.Spec.Driver == "rdma.railyard.io" && s.Spec.Pool.Name == "node-a/rdma-vf-dra" {
				n += len(s.Spec.Devices)
			}
		}
		if ok(n) {
			return n
		}
	}
	t.Fatalf("%s: %d devices in the slices", what, n)
	return n
}

// A dra pool is served by the DRA kubelet plugin only: its devices are in
// the API server's ResourceSlices, no device plugin serves it, the other
// pool keeps its device plugin; the kubelet plugin registers; a port going
// DOWN takes its VFs out of the slices at the next port poll, and back.
//
// The API server (client-go's fake) answers the driver's device-taint
// probe as 1.35 does (taints dropped), so the DOWN VFs are left out; with
// one that keeps taints (1.37) they stay published with the NoSchedule
// taint and come back untainted.
func TestDRAPoolIsServedByTheKubeletPluginOnly(t *testing.T) {
	for _, keepTaints := range []bool{false, true} {
		t.Run(map[bool]string{false: "server drops taints", true: "server keeps taints"}[keepTaints], func(t *testing.T) {
			checkDRAPoolIsServedByTheKubeletPluginOnly(t, keepTaints)
		})
	}
}

func checkDRAPoolIsServedByTheKubeletPluginOnly(t *testing.T, keepTaints bool) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-a"}})
	keeps := draplugintest.Release135
	if keepTaints {
		keeps = draplugintest.Release137
	}
	draplugintest.DryRunSlices(kube, keeps)
	a, log, stop := startWithClient(t, e.draArgs(e.writeConfig(t, draConfig(e, "node-a"))), kube)
	defer stop()
	var want, down int
	var downRDMA string
	for _, n := range a.Topology().NICs {
		if n.Netdev == "enp5s0f0np0" || n.Netdev == "enp12s0f0np0" {
			want += len(n.VFs)
		}
		if n.Netdev == "enp5s0f0np0" {
			down, downRDMA = len(n.VFs), n.RDMA
		}
	}
	if want != 4 || down != 2 {
		t.Fatalf("the model changed: %d VFs in the dra pool, %d on enp5s0f0np0", want, down)
	}
	sliceDevices(t, kube, "at start", func(n int) bool { return n == want })
	if ps := a.Plugins(); len(ps) != 1 || ps[0].Resource() != "railyard.io/rdma_pf" {
		t.Errorf("device plugins: %d, want the pf pool's only", len(ps))
	}
	if _, err := os.Stat(filepath.Join(e.dir, "registry", "rdma.railyard.io-reg.sock")); err != nil {
		t.Errorf("the kubelet plugin did not register: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "plugins", "dra.sock")); err != nil {
		t.Errorf("no dra.sock: %v", err)
	}
	if err := fakesysfs.SetPortState(e.sysfs, downRDMA, 1, fakesysfs.PortDown); err != nil {
		t.Fatal(err)
	}
	if keepTaints {
		sliceDevices(t, kube, "port DOWN: VFs tainted", func(n int) bool { return n == want && taintedDevices(t, kube) == down })
	} else {
		sliceDevices(t, kube, "port DOWN", func(n int) bool { return n == want-down })
	}
	if err := fakesysfs.SetPortState(e.sysfs, downRDMA, 1, fakesysfs.PortActive); err != nil {
		t.Fatal(err)
	}
	sliceDevices(t, kube, "port ACTIVE again", func(n int) bool { return n == want && taintedDevices(t, kube) == 0 })
	if !keepTaints && !strings.Contains(log.String(), "DRA device not published") {
		t.Errorf("the DOWN port's VFs were not logged:\n%s", log)
	}
}

// taintedDevices counts the devices of the dra pool with Railyard's taint.
func taintedDevices(t *testing.T, kube *fake.Clientset) int {
	t.Helper()
	list, err := kube.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list.Items {
		for _, d := range s.Spec.Devices {
			for _, tt := range d.Taints {
				if tt.Key == dra.TaintKey && tt.Effect == resourceapi.DeviceTaintEffectNoSchedule {
					n++
				}
			}
		}
	}
	return n
}

// What a dra pool needs is checked before anything is served: the node's
// name, no device a device plugin pool serves too, and an API server
// (none is asked for without a dra pool: every other agent test runs
// without one).
func TestDRAPoolStartUpErrors(t *testing.T) {
	e := newEnv(t, "roce-8gpu-4nic", 2)
	noEnv := func(string) (string, bool) { return "", false }
	kube := fake.NewClientset()
	overlap := strings.Replace(draConfig(e, "node-a"), "deviceKind: pf\n  policy: packed\n  selectors:\n    pfNames: [enp132s0f0np0]",
		"deviceKind: vf\n  selectors:\n    pfNames: [enp12s0f0np0]", 1)
	for _, tc := range []struct {
		name, config string
		kube         *fake.Clientset
		args         []string
		want         string
	}{
		{"no node name", draConfig(e, `""`), kube, nil, "needs this node's name"},
		{"served both ways", overlap, kube, nil, "devices served by both the device plugin and DRA"},
		{"no API server", draConfig(e, "node-a"), nil, []string{"--kubeconfig", filepath.Join(e.dir, "missing")}, "needs the API server (--kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var client kubernetes.Interface // nil: from --kubeconfig
			if tc.kube != nil {
				client = tc.kube
			}
			args := append(e.draArgs(e.writeConfig(t, tc.config)), tc.args...)
			err := runWith(context.Background(), args, noEnv, testStreams(), discovery.Discover, nil, client)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestDRAViewOfAnEarlierConfigurationIsRemoved: an agent whose
// configuration has no dra pool removes the DRA view an earlier one left
// in the binding directory (railyard-cni would still treat its pools as
// DRA pools), and starts without one there too.
func TestDRAViewOfAnEarlierConfigurationIsRemoved(t *testing.T) {
	stateDir := t.TempDir()
	cfg := &v1alpha1.AgentConfig{StateDir: stateDir, Pools: []v1alpha1.Pool{{Name: "railyard.io/rdma_vf", Delivery: v1alpha1.DeliveryDevicePlugin}}}
	view := draview.Path(BindingDir(stateDir))
	if err := draview.Write(BindingDir(stateDir), draview.View{Pools: []string{"railyard.io/rdma_vf"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		d, err := newDRA(cfg, logr.Discard(), NewMetrics())
		if err != nil || d != nil {
			t.Fatalf("start %d: %v, %v; want no DRA plugin and no error", i, d, err)
		}
		if _, err := os.Stat(view); !os.IsNotExist(err) {
			t.Fatalf("start %d: the DRA view is still there (%v)", i, err)
		}
	}
}
