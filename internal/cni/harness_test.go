package cni

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/cni/sysfstest"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

// fakeIPAM hands out addresses from 192.168.50.0/24 per (container, ifname)
// and can fail a command.
type fakeIPAM struct {
	mu    sync.Mutex
	next  int
	held  map[string]string
	fail  map[string]error
	calls []string
}

func newFakeIPAM() *fakeIPAM {
	return &fakeIPAM{next: 10, held: map[string]string{}, fail: map[string]error{}}
}

func (f *fakeIPAM) Exec(_ context.Context, cmd, plugin string, _ []byte, a Args) (types.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, cmd+" "+plugin+" "+a.ContainerID)
	if err := f.fail[cmd]; err != nil {
		return nil, err
	}
	id := a.ContainerID + "/" + a.IfName
	switch cmd {
	case "ADD":
		addr := fmt.Sprintf("192.168.50.%d/24", f.next)
		f.next++
		f.held[id] = addr
		ip, ipn, _ := net.ParseCIDR(addr)
		ipn.IP = ip
		return &current.Result{CNIVersion: current.ImplementedSpecVersion, IPs: []*current.IPConfig{{Address: *ipn}}}, nil
	case "DEL":
		delete(f.held, id)
	case "CHECK":
		if _, ok := f.held[id]; !ok {
			return nil, fmt.Errorf("no address for %s", id)
		}
	}
	return nil, nil
}

func (f *fakeIPAM) allocated() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.held)
}

const (
	vfPCI  = "0000:03:00.2"
	vf2PCI = "0000:03:00.3"
	pfPCI  = "0000:03:00.0"
	pod1   = "/var/run/netns/pod1"
	pod2   = "/var/run/netns/pod2"
)

var (
	origMAC, _ = net.ParseMAC("02:aa:00:00:00:02")
	origVF     = netops.VFSettings{VLANProto: netops.VLANProto8021Q, SpoofChk: true, LinkState: netops.VFLinkStateAuto}
	origLink   = netops.Link{Name: "ens1f0v2", Index: 5, MTU: 1500, MAC: origMAC, Up: true,
		Alias: "uplink vf2", AltNames: []string{"enp3s0f0v2"}}
)

// world is a fake node: a VF (0000:03:00.2, netdev ens1f0v2, RDMA mlx5_3)
// of PF ens1f0, a second VF (0000:03:00.3, ens1f0v3, mlx5_4), two pod
// namespaces, a fake sysfs tree, a state directory and fake IPAM.
type world struct {
	t        *testing.T
	ops      *netopstest.Fake
	ipam     *fakeIPAM
	sysfs    string
	stateDir string
	infoDir  string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{t: t, ops: netopstest.New(), ipam: newFakeIPAM(),
		sysfs: filepath.Join(dir, "sys"), stateDir: filepath.Join(dir, "state"), infoDir: filepath.Join(dir, "devinfo")}
	tree, err := sysfstest.New(w.sysfs)
	must(t, err)
	must(t, tree.AddNetdev(pfPCI, "ens1f0"))
	must(t, tree.AddNetdev(vfPCI, "ens1f0v2"))
	must(t, tree.AddNetdev(vf2PCI, "ens1f0v3"))
	must(t, tree.AddRDMA(vfPCI, "mlx5_3"))
	must(t, tree.AddRDMA(vf2PCI, "mlx5_4"))
	must(t, tree.AddVF(pfPCI, 2, vfPCI))
	must(t, tree.AddVF(pfPCI, 3, vf2PCI))
	w.ops.AddNetns(pod1)
	w.ops.AddNetns(pod2)
	w.ops.AddLink(netops.Host, netops.Link{Name: "ens1f0", Index: 3, MTU: 1500, Up: true}, false)
	w.ops.AddLink(netops.Host, origLink, false)
	w.ops.AddLink(netops.Host, netops.Link{Name: "ens1f0v3", Index: 6, MTU: 1500, MAC: origMAC, Up: false}, false)
	w.ops.AddVF("ens1f0", 2, origVF)
	w.ops.AddVF("ens1f0", 3, origVF)
	w.ops.SetVFNetdev("ens1f0", 2, origLink.Index)
	w.ops.SetVFNetdev("ens1f0", 3, 6)
	w.ops.AddRDMA("mlx5_3", netops.Host)
	w.ops.AddRDMA("mlx5_4", netops.Host)
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) plugin() *Plugin {
	return &Plugin{Ops: w.ops, IPAM: w.ipam, BootID: "boot-1", DeviceInfoDir: w.infoDir, TestRoot: os.TempDir()}
}

// infoFile is the device-info file Multus names for network's interface
// ifname of container cid under the device-info directory dir.
func infoFile(dir, network, cid, ifname string) string {
	return multustest.DeviceInfoPath(filepath.Join(dir, "cni"), network, cid, ifname)
}

// conf is the full VF configuration; extra fields override.
func (w *world) conf(device string, extra map[string]any) []byte {
	m := map[string]any{
		"cniVersion": "1.1.0", "name": "rdma-net", "type": "railyard-cni",
		"deviceID": device, "ipam": map[string]any{"type": "fake-ipam"},
		"mtu": 9000, "mac": "02:bb:00:00:00:01", "vlan": 100, "vlanQoS": 3,
		"spoofchk": "off", "trust": "on", "link_state": "enable",
		"min_tx_rate": 100, "max_tx_rate": 2000, "rdma": true,
		"stateDir": w.stateDir, "sysfsRoot": w.sysfs, "lockTimeout": "200ms",
	}
	return confJSON(w.t, m, extra)
}

// confJSON is m with extra's keys set (a nil value removes one), as JSON.
func confJSON(t *testing.T, m, extra map[string]any) []byte {
	t.Helper()
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	must(t, err)
	return b
}

func args(cid, netns, ifname string, conf []byte) Args {
	return Args{ContainerID: cid, Netns: netns, IfName: ifname, Config: conf}
}

// assertPristine checks that VF 0000:03:00.2 is on the host exactly as it
// started, with nothing left anywhere.
func (w *world) assertPristine() {
	w.t.Helper()
	l, ok := w.ops.LinkIn(netops.Host, origLink.Name)
	if !ok {
		w.t.Fatalf("device not on the host under %s; host has %v, pod1 %v", origLink.Name, w.ops.LinkNames(netops.Host), w.ops.LinkNames(pod1))
	}
	if l.Index != origLink.Index || l.MTU != origLink.MTU || l.MAC.String() != origLink.MAC.String() ||
		l.Up != origLink.Up || l.Alias != origLink.Alias || !slices.Equal(l.AltNames, origLink.AltNames) {
		w.t.Errorf("host link %+v (MAC %s), want %+v (MAC %s)", l, l.MAC, origLink, origLink.MAC)
	}
	if got := w.ops.VFSettingsOf("ens1f0", 2); got != origVF {
		w.t.Errorf("VF settings %+v, want %+v", got, origVF)
	}
	// None (all zeros) as before ADD, or the netdev's own MAC, which the VF
	// tells the PF again once up: never the pod's.
	if a, err := w.ops.VFAddresses(context.Background(), "ens1f0", 2); err != nil ||
		(a.MAC.String() != "00:00:00:00:00:00" && a.MAC.String() != origMAC.String()) {
		w.t.Errorf("VF MAC through the PF %s (%v), want none (all zeros) or the netdev's own %s", a.MAC, err, origMAC)
	}
	if where, _ := w.ops.RDMANetns("mlx5_3"); where != netops.Host {
		w.t.Errorf("RDMA device in %q, want host", where)
	}
	if names := w.ops.LinkNames(pod1); len(names) != 0 {
		w.t.Errorf("pod1 still has links %v", names)
	}
	if rules, err := w.ops.Rules(context.Background(), pod1); err != nil || len(rules) != 0 {
		w.t.Errorf("routing rules left in pod1: %v (%v)", rules, err)
	}
	recs, err := state.Store{Dir: w.stateDir}.List()
	if err != nil || len(recs) != 0 {
		w.t.Errorf("state records left: %v (%v)", recs, err)
	}
	if left, _ := filepath.Glob(filepath.Join(w.infoDir, "cni", "*")); len(left) != 0 {
		w.t.Errorf("device-info files left: %v", left)
	}
	if n := w.ipam.allocated(); n != 0 {
		w.t.Errorf("%d IPAM allocations left", n)
	}
}

// tree is the world's fake sysfs, to add devices to.
func (w *world) tree() *sysfstest.Tree { return &sysfstest.Tree{Root: w.sysfs} }
