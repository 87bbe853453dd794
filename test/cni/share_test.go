package cni

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

// TestSharedNICMacvlanThroughLibcniVeth: two pods take shares of one NIC
// (device IDs "<pci>-s0" and "<pci>-s1" from a shared pool, passed by
// Multus); each gets a real macvlan on the NIC's netdev as net1 with its own
// address; the NIC stays on the host untouched; DEL removes each pod's
// macvlan only, and a DEL after the pod's netns is gone succeeds. The NIC
// is a veth standing in for a RoCE PF.
func TestSharedNICMacvlanThroughLibcniVeth(t *testing.T) {
	n := newNode(t)
	nic := n.addVF(pciA)
	cni := libcni.NewCNIConfigWithCacheDir([]string{env.cniPath}, filepath.Join(n.dir, "cache"), nil)
	nad := n.nad("roce-shared", "192.168.213.0/24")
	nad["mtu"] = 1300 // at most the NIC's 1400
	raw, err := json.Marshal(nad)
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	var rts []*libcni.RuntimeConf
	var confs []*libcni.NetworkConfig
	for k := 0; k < 2; k++ {
		pod := netnstest.NewNetns(t, "share")
		share := deviceid.Share(pciA, k)
		//lint:ignore SA1019 Multus calls plugins through it (pkg/multus/multus.go, confAdd/confDel).
		c, err := libcni.ConfFromBytes(multusDelegate(t, raw, share))
		if err != nil {
			t.Fatal(err)
		}
		rt := multusRuntimeConf(t, "roce-shared", "pod"+string(rune('a'+k)), pod, share)
		if _, err := cni.AddNetwork(ctx, c, rt); err != nil {
			t.Fatalf("ADD share %d: %v", k, err)
		}
		out := netnstest.IP(t, "-n", filepath.Base(pod), "-d", "-o", "link", "show", "net1")
		if !strings.Contains(out, "macvlan") || !strings.Contains(out, "mtu 1300") {
			t.Errorf("net1 in pod %d: %s", k, out)
		}
		if err := cni.CheckNetwork(ctx, c, rt); err != nil {
			t.Errorf("CHECK share %d: %v", k, err)
		}
		pods, rts, confs = append(pods, pod), append(rts, rt), append(confs, c)
	}
	// The NIC never left the host and kept its settings.
	n.assertHome(pciA)
	if got := n.ipamFiles("roce-shared"); got != 2 {
		t.Errorf("host-local holds %d addresses, want 2", got)
	}
	if err := cni.DelNetwork(ctx, confs[0], rts[0]); err != nil {
		t.Fatal(err)
	}
	if got := podLinks(t, pods[0]); len(got) != 0 {
		t.Errorf("pod 0 still has %v", got)
	}
	if got := podLinks(t, pods[1]); len(got) != 1 || got[0] != "net1" {
		t.Errorf("pod 1 lost its macvlan: %v", got)
	}
	netnstest.IP(t, "netns", "delete", filepath.Base(pods[1]))
	if err := cni.DelNetwork(ctx, confs[1], rts[1]); err != nil {
		t.Fatalf("DEL after the netns is gone: %v", err)
	}
	n.assertHome(pciA)
	if got := n.ipamFiles("roce-shared"); got != 0 {
		t.Errorf("host-local still holds %d addresses", got)
	}
	if out := netnstest.IP(t, "-o", "link", "show", "master", nic); strings.TrimSpace(out) != "" {
		t.Errorf("links left on %s: %s", nic, out)
	}
}
