package cni

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// These tests drive railyard-cni through the real libcni (v1.3.1, the
// library Multus, containerd and CRI-O call plugins with), sending exactly
// what Multus sends a delegate of a network with a resourceName (see
// internal/cni/multustest for what that is and where it comes from).

// multusDelegate is conf with Multus's device injection.
func multusDelegate(t *testing.T, conf []byte, pci string) []byte {
	t.Helper()
	b, err := multustest.Delegate(conf, pci)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// multusDevInfoDir is where Multus asks delegates to write device-info
// files, the only directory railyard-cni writes them in.
const multusDevInfoDir = "/var/run/k8s.cni.cncf.io/devinfo/cni"

// multusRuntimeConf is the libcni RuntimeConf Multus builds for a pod in
// namespace "default" that asks for network (an item of its networks
// annotation: "name" or "namespace/name" of a NetworkAttachmentDefinition),
// with the delegate name Multus gives it ("<namespace>/<name>", whatever
// the config's own name). Its device-info file is in the node's real
// Multus directory: it is removed when the test ends.
func multusRuntimeConf(t *testing.T, network, containerID, netns, pci string) *libcni.RuntimeConf {
	t.Helper()
	sels, err := multustest.ParseNetworks(network, "default")
	if err != nil || len(sels) != 1 {
		t.Fatalf("network %q: %v, %v", network, sels, err)
	}
	delegate := sels[0].Namespace + "/" + sels[0].Name
	pod := multustest.Pod{Namespace: "default", Name: "trainer-0", UID: "5f1c1e0e-7d53-4b8e-9a55-0a1b2c3d4e5f", SandboxID: containerID, Netns: netns}
	rt := multustest.RuntimeConf(delegate, "net1", pod, pci, multusDevInfoDir)
	t.Cleanup(func() { os.Remove(multustest.DeviceInfoPath(multusDevInfoDir, delegate, containerID, "net1")) })
	return rt
}

// nad is a NetworkAttachmentDefinition's config for railyard-cni on this
// node, declaring the capabilities Multus fills.
func (n *node) nad(name, subnet string) map[string]any {
	return map[string]any{
		"cniVersion": "1.0.0", "name": name, "type": "railyard-cni",
		"stateDir": n.stateDir, "sysfsRoot": n.sysfs.Root, "lockTimeout": "3s", "mtu": 9000,
		"capabilities": map[string]bool{"deviceID": true, "CNIDeviceInfoFile": true},
		"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(n.dir, "ipam"),
			"ranges": [][]map[string]string{{{"subnet": subnet}}}},
	}
}

// TestLibcniAsMultusAddCheckDelVeth: ADD, CHECK and DEL (twice) as Multus
// sends them, through the real libcni, for a config and a conflist. The
// network is a NAD in the pod's namespace named like its config, or
// (the chart's layout) a NAD in another namespace whose name differs from
// the config's: Multus names the device-info file after the NAD
// ("railyard-system-rdma-pf-<sandbox>_net1"), never the config.
func TestLibcniAsMultusAddCheckDelVeth(t *testing.T) {
	for _, tc := range []struct {
		list     bool
		network  string
		infoFile string
	}{
		{false, "roce-a", "default-roce-a-c0ffee_net1"},
		{true, "roce-a", "default-roce-a-c0ffee_net1"},
		{false, "railyard-system/rdma-pf", "railyard-system-rdma-pf-c0ffee_net1"},
		{true, "railyard-system/rdma-pf", "railyard-system-rdma-pf-c0ffee_net1"},
	} {
		list := tc.list
		t.Run(fmt.Sprintf("conflist=%v,network=%s", list, tc.network), func(t *testing.T) {
			n := newNode(t)
			n.addVF(pciA)
			pod := netnstest.NewNetns(t, "pod")
			raw, err := json.Marshal(n.nad("roce-a", "192.168.210.0/24"))
			if err != nil {
				t.Fatal(err)
			}
			if list {
				var plugin map[string]any
				_ = json.Unmarshal(raw, &plugin)
				raw, _ = json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "roce-a", "plugins": []any{plugin}})
			}
			cni := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache"), nil)
			rt := multusRuntimeConf(t, tc.network, "c0ffee", pod, pciA)
			delegate := multusDelegate(t, raw, pciA)
			var (
				add        func() (types.Result, error)
				check, del func() error
			)
			if list {
				cl, err := libcni.NetworkConfFromBytes(delegate)
				if err != nil {
					t.Fatal(err)
				}
				add = func() (types.Result, error) { return cni.AddNetworkList(ctx, cl, rt) }
				check = func() error { return cni.CheckNetworkList(ctx, cl, rt) }
				del = func() error { return cni.DelNetworkList(ctx, cl, rt) }
			} else {
				//lint:ignore SA1019 Multus calls plugins through it (pkg/multus/multus.go, confAdd/confDel).
				c, err := libcni.ConfFromBytes(delegate)
				if err != nil {
					t.Fatal(err)
				}
				add = func() (types.Result, error) { return cni.AddNetwork(ctx, c, rt) }
				check = func() error { return cni.CheckNetwork(ctx, c, rt) }
				del = func() error { return cni.DelNetwork(ctx, c, rt) }
			}
			res, err := add()
			if err != nil {
				t.Fatalf("ADD as Multus sends it: %v", err)
			}
			b, _ := json.Marshal(res)
			if !strings.Contains(string(b), `"pciID":"`+pciA+`"`) || !strings.Contains(string(b), "192.168.210.") {
				t.Errorf("result %s", b)
			}
			if got := podLinks(t, pod); len(got) != 1 || got[0] != "net1" {
				t.Errorf("pod links %v, want net1", got)
			}
			// Multus reads this file into the pod's network-status.
			infoPath := rt.CapabilityArgs["CNIDeviceInfoFile"].(string)
			if got := filepath.Base(infoPath); got != tc.infoFile {
				t.Errorf("Multus names the device-info file %s, want %s", got, tc.infoFile)
			}
			info, err := os.ReadFile(infoPath)
			if err != nil || !strings.Contains(string(info), pciA) {
				t.Errorf("device-info file: %s (%v)", info, err)
			}
			if err := check(); err != nil {
				t.Errorf("CHECK: %v", err)
			}
			for i := 0; i < 2; i++ {
				if err := del(); err != nil {
					t.Fatalf("DEL %d: %v", i+1, err)
				}
			}
			n.assertHome(pciA)
			if got := n.ipamFiles("roce-a"); got != 0 {
				t.Errorf("host-local still holds %d addresses", got)
			}
		})
	}
}

// TestLibcniDelReleasesWhenAddWouldRejectVeth: a pod attached under one
// configuration is released by a DEL whose configuration ADD would
// refuse (here a field this version does not know, as pciBusID once was):
// nothing may keep a pod Terminating for good.
func TestLibcniDelReleasesWhenAddWouldRejectVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	pod := netnstest.NewNetns(t, "pod")
	cni := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache"), nil)
	rt := multusRuntimeConf(t, "roce-a", "c0ffee", pod, pciA)
	conf := n.nad("roce-a", "192.168.211.0/24")
	raw, _ := json.Marshal(conf)
	//lint:ignore SA1019 Multus calls plugins through it (pkg/multus/multus.go, confAdd/confDel).
	c, err := libcni.ConfFromBytes(multusDelegate(t, raw, pciA))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cni.AddNetwork(ctx, c, rt); err != nil {
		t.Fatal(err)
	}
	conf["fieldFromANewerMultus"] = map[string]any{"x": 1}
	raw, _ = json.Marshal(conf)
	//lint:ignore SA1019 Multus calls plugins through it (pkg/multus/multus.go, confAdd/confDel).
	changed, err := libcni.ConfFromBytes(multusDelegate(t, raw, pciA))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cni.AddNetwork(ctx, changed, multusRuntimeConf(t, "roce-a", "other", pod, pciA)); err == nil {
		t.Fatal("ADD accepted an unknown field")
	}
	if err := cni.DelNetwork(ctx, changed, rt); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	n.assertHome(pciA)
	if got := n.ipamFiles("roce-a"); got != 0 {
		t.Errorf("host-local still holds %d addresses", got)
	}
}

// TestLibcniGCKeepsValidAttachmentsVeth: libcni's GC sends the valid
// attachments as cni.dev/valid-attachments and cni.dev/attachments; the
// attachment named there stays, the other is released.
func TestLibcniGCKeepsValidAttachmentsVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.addVF(pciB)
	podA, podB := netnstest.NewNetns(t, "poda"), netnstest.NewNetns(t, "podb")
	cni := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache"), nil)
	plugin := n.nad("roce-gc", "192.168.212.0/24")
	plugin["cniVersion"] = "1.1.0"
	raw, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "roce-gc", "plugins": []any{plugin}})
	rtA := multusRuntimeConf(t, "roce-gc", "keep", podA, pciA)
	rtB := multusRuntimeConf(t, "roce-gc", "stale", podB, pciB)
	for _, x := range []struct {
		rt  *libcni.RuntimeConf
		pci string
	}{{rtA, pciA}, {rtB, pciB}} {
		cl, err := libcni.NetworkConfFromBytes(multusDelegate(t, raw, x.pci))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cni.AddNetworkList(ctx, cl, x.rt); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := libcni.NetworkConfFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Only GC itself, not libcni's DEL of cached attachments, is under
	// test: a fresh cache directory holds none.
	gc := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache-gc"), nil)
	if err := gc.GCNetworkList(ctx, cl, &libcni.GCArgs{ValidAttachments: []types.GCAttachment{{ContainerID: "keep", IfName: "net1"}}}); err != nil {
		t.Fatalf("GC: %v", err)
	}
	n.assertHome(pciB)
	if got := podLinks(t, podA); len(got) != 1 || got[0] != "net1" {
		t.Errorf("GC touched the valid attachment: pod A links %v", got)
	}
}

// TestBinaryLogsWhereConfigured: sriov-cni's logFile and logLevel: one line
// per call in the file, nothing but the result on stdout.
func TestBinaryLogsWhereConfigured(t *testing.T) {
	require(t)
	logFile := filepath.Join(t.TempDir(), "cni.log")
	conf := fmt.Sprintf(`{"cniVersion":"1.1.0","name":"n","type":"railyard-cni","deviceID":"0000:01:00.0","logLevel":"info","logFile":%q,"stateDir":%q}`,
		logFile, t.TempDir())
	out, err := runBinary(t, "DEL", conf)
	if err != nil {
		t.Fatalf("DEL of nothing: %v %s", err, out)
	}
	if out != "" {
		t.Errorf("DEL stdout %q, want nothing", out)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "command=DEL") || !strings.Contains(s, "device=0000:01:00.0") || !strings.Contains(s, "railyard-cni done") {
		t.Errorf("log %q", s)
	}
}

// TestLibcniGCWithoutValidAttachmentsReleasesNothingVeth: libcni's GC
// with no valid attachments (GCArgs without a list: null in both keys) is
// refused and releases nothing (it was read as "nothing is valid" and tore
// down every attachment of the network); an empty list releases them all.
func TestLibcniGCWithoutValidAttachmentsReleasesNothingVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	pod := netnstest.NewNetns(t, "pod")
	cni := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache"), nil)
	plugin := n.nad("roce-nogc", "192.168.213.0/24")
	plugin["cniVersion"] = "1.1.0"
	raw, _ := json.Marshal(map[string]any{"cniVersion": "1.1.0", "name": "roce-nogc", "plugins": []any{plugin}})
	cl, err := libcni.NetworkConfFromBytes(multusDelegate(t, raw, pciA))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cni.AddNetworkList(ctx, cl, multusRuntimeConf(t, "roce-nogc", "kept", pod, pciA)); err != nil {
		t.Fatal(err)
	}
	gcList, err := libcni.NetworkConfFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh cache: only the plugin's GC is under test, not libcni's DEL
	// of the attachments it cached.
	gc := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache-gc"), nil)
	if err := gc.GCNetworkList(ctx, gcList, &libcni.GCArgs{}); err == nil || !strings.Contains(err.Error(), "cni.dev/valid-attachments") {
		t.Fatalf("GC without valid attachments: %v, want refused", err)
	}
	if got := podLinks(t, pod); len(got) != 1 || got[0] != "net1" {
		t.Fatalf("pod links after a refused GC: %v, want net1", got)
	}
	if err := gc.GCNetworkList(ctx, gcList, &libcni.GCArgs{ValidAttachments: []types.GCAttachment{}}); err != nil {
		t.Fatalf("GC with an empty list: %v", err)
	}
	n.assertHome(pciA)
	if got := n.ipamFiles("roce-nogc"); got != 0 {
		t.Errorf("host-local still holds %d addresses", got)
	}
}
