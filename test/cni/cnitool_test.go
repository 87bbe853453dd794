package cni

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/cni/multustest"
	"github.com/railyard-io/railyard/internal/netops/netnstest"
)

var ctx = context.Background()

const (
	pciA = "0000:7f:00.2"
	pciB = "0000:7f:00.3"
)

func TestCnitoolAddCheckStatusDelVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	pod := netnstest.NewNetns(t, "pod")
	// cnitool's container ID hashes the netns path; the file is the one
	// Multus would name for it, in Multus's directory.
	info := multustest.DeviceInfoPath(multusDevInfoDir, "rdma-a", fmt.Sprintf("cnitool-%x", sha512.Sum512([]byte(pod)))[:len("cnitool-")+20], "net1")
	t.Cleanup(func() { os.Remove(info) })
	n.network("rdma-a", "192.168.201.0/24", map[string]any{"CNIDeviceInfoFile": info})

	out, err := n.cnitool("add", "rdma-a", pod, pciA)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(info); err != nil || !strings.Contains(string(b), `"pci-address":"`+pciA+`"`) {
		t.Errorf("device-info file %q (%v)", b, err)
	}
	var res current.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("result %q: %v", out, err)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].PciID != pciA || res.Interfaces[0].Name != "net1" || res.Interfaces[0].Mtu != 9000 {
		t.Errorf("result interfaces %s", out)
	}
	if len(res.IPs) != 1 || !strings.HasPrefix(res.IPs[0].Address.String(), "192.168.201.") {
		t.Fatalf("result IPs %s", out)
	}
	addrs := netnstest.IP(t, "-n", filepath.Base(pod), "-o", "addr", "show", "dev", "net1")
	if !strings.Contains(addrs, res.IPs[0].Address.String()) {
		t.Errorf("pod interface lacks %s: %s", res.IPs[0].Address.String(), addrs)
	}
	if links := podLinks(t, pod); !slices.Equal(links, []string{"net1"}) {
		t.Errorf("pod links %v", links)
	}
	if _, err := n.cnitool("check", "rdma-a", pod, pciA); err != nil {
		t.Errorf("check: %v", err)
	}
	if _, err := n.cnitool("status", "rdma-a", pod, ""); err != nil {
		t.Errorf("status: %v", err)
	}
	if _, err := n.cnitool("del", "rdma-a", pod, pciA); err != nil {
		t.Fatal(err)
	}
	n.assertHome(pciA)
	if got := n.ipamFiles("rdma-a"); got != 0 {
		t.Errorf("host-local still holds %d addresses", got)
	}
	if exists(info) {
		t.Error("device-info file left after DEL")
	}
	if _, err := n.cnitool("del", "rdma-a", pod, pciA); err != nil {
		t.Fatalf("second del: %v", err)
	}
	n.assertHome(pciA)
}

func TestCnitoolCheckFailsWhenInterfaceDriftsVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.network("rdma-a", "192.168.202.0/24", nil)
	pod := netnstest.NewNetns(t, "pod")
	if _, err := n.cnitool("add", "rdma-a", pod, pciA); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "-n", filepath.Base(pod), "link", "set", "net1", "down")
	if _, err := n.cnitool("check", "rdma-a", pod, pciA); err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("check of a downed interface: %v", err)
	}
	netnstest.IP(t, "-n", filepath.Base(pod), "link", "set", "net1", "up")
	netnstest.IP(t, "-n", filepath.Base(pod), "addr", "flush", "dev", "net1")
	if _, err := n.cnitool("check", "rdma-a", pod, pciA); err == nil {
		t.Error("check passed with the addresses flushed")
	}
	if _, err := n.cnitool("del", "rdma-a", pod, pciA); err != nil {
		t.Fatal(err)
	}
	n.assertHome(pciA)
}

func TestCnitoolDelAfterNetnsDeletedVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.network("rdma-a", "192.168.203.0/24", nil)
	pod := netnstest.NewNetns(t, "pod")
	if _, err := n.cnitool("add", "rdma-a", pod, pciA); err != nil {
		t.Fatal(err)
	}
	netnstest.IP(t, "netns", "del", filepath.Base(pod))
	if _, err := n.cnitool("del", "rdma-a", pod, pciA); err != nil {
		t.Fatalf("del after netns deletion: %v", err)
	}
	if _, err := n.cnitool("del", "rdma-a", pod, pciA); err != nil {
		t.Fatalf("second del: %v", err)
	}
	if exists(filepath.Join(n.stateDir, "devices", pciA+".json")) {
		t.Error("record left")
	}
	if got := n.ipamFiles("rdma-a"); got != 0 {
		t.Errorf("host-local still holds %d addresses", got)
	}
}

func TestCnitoolDelWithStateRemovedVeth(t *testing.T) {
	n := newNode(t)
	dev := n.addVF(pciA)
	n.network("rdma-a", "192.168.204.0/24", nil)
	pod := netnstest.NewNetns(t, "pod")
	if _, err := n.cnitool("add", "rdma-a", pod, pciA); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(n.stateDir, "devices")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.cnitool("del", "rdma-a", pod, pciA); err != nil {
		t.Fatalf("del without state: %v", err)
	}
	if links := podLinks(t, pod); len(links) != 0 {
		t.Errorf("pod still has %v", links)
	}
	if out := netnstest.IP(t, "-o", "link", "show", "dev", dev); !strings.Contains(out, dev) {
		t.Errorf("device not back under %s", dev)
	}
}

func TestCnitoolRollbackWhenIPAMExhaustedVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.addVF(pciB)
	// A /30 has exactly one address to give out besides the gateway.
	n.network("rdma-a", "192.168.205.0/30", nil)
	podA, podB := netnstest.NewNetns(t, "a"), netnstest.NewNetns(t, "b")
	if _, err := n.cnitool("add", "rdma-a", podA, pciA); err != nil {
		t.Fatal(err)
	}
	_, err := n.cnitool("add", "rdma-a", podB, pciB)
	if err == nil {
		t.Fatal("second ADD got an address from an exhausted range")
	}
	n.assertHome(pciB)
	if links := podLinks(t, podB); len(links) != 0 {
		t.Errorf("failed ADD left %v in the pod", links)
	}
	if _, err := n.cnitool("del", "rdma-a", podA, pciA); err != nil {
		t.Fatal(err)
	}
	n.assertHome(pciA)
}

func TestCnitoolRollbackWhenIfnameTakenInPodVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.network("rdma-a", "192.168.206.0/24", nil)
	pod := netnstest.NewNetns(t, "pod")
	// The pod already has a net1 (the other end of a veth made for this).
	other := netnstest.Name("o")
	netnstest.NewVeth(t, other, pod)
	peerName := strings.TrimSpace(strings.SplitN(podLinks(t, pod)[0], "@", 2)[0])
	netnstest.IP(t, "-n", filepath.Base(pod), "link", "set", peerName, "name", "net1")
	if _, err := n.cnitool("add", "rdma-a", pod, pciA); err == nil {
		t.Fatal("ADD over an existing net1 succeeded")
	}
	n.assertHome(pciA)
	if got := n.ipamFiles("rdma-a"); got != 0 {
		t.Errorf("host-local still holds %d addresses after rollback", got)
	}
	if links := podLinks(t, pod); !slices.Equal(links, []string{"net1"}) {
		t.Errorf("pod links %v, want only its own net1", links)
	}
}

func TestCnitoolUnknownFieldRejectedNamingItVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.network("rdma-a", "192.168.207.0/24", map[string]any{"vlan_id": 7})
	pod := netnstest.NewNetns(t, "pod")
	_, err := n.cnitool("add", "rdma-a", pod, pciA)
	if err == nil || !strings.Contains(err.Error(), "vlan_id") {
		t.Fatalf("ADD with an unknown field: %v", err)
	}
	n.assertHome(pciA)
}

// Two pods race for one device: exactly one gets it, the other fails with
// try-again-later and is left with nothing.
func TestCnitoolConcurrentAddsNeverShareDeviceVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.network("rdma-a", "192.168.209.0/24", nil)
	for round := range 3 {
		pods := []string{netnstest.NewNetns(t, "a"), netnstest.NewNetns(t, "b")}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range pods {
			wg.Add(1)
			go func() { defer wg.Done(); _, errs[i] = n.cnitool("add", "rdma-a", pods[i], pciA) }()
		}
		wg.Wait()
		winners := 0
		for i, err := range errs {
			links := podLinks(t, pods[i])
			if err == nil {
				winners++
				if !slices.Equal(links, []string{"net1"}) {
					t.Fatalf("round %d: winner has %v", round, links)
				}
				continue
			}
			if !strings.Contains(err.Error(), `"code": 11`) && !strings.Contains(err.Error(), "try again later") {
				t.Errorf("round %d: loser failed without try-again-later: %v", round, err)
			}
			if len(links) != 0 {
				t.Fatalf("round %d: loser has %v", round, links)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d pods got the device (%v)", round, winners, errs)
		}
		for i := range pods {
			if _, err := n.cnitool("del", "rdma-a", pods[i], pciA); err != nil {
				t.Fatalf("round %d: del %d: %v", round, i, err)
			}
		}
		n.assertHome(pciA)
	}
}

// One pod's DEL races the next pod's ADD on the same device: the ADD either
// waits for the release and gets the device, or fails cleanly; never both
// pods hold it.
func TestCnitoolDelRacesAddOnOneDeviceVeth(t *testing.T) {
	n := newNode(t)
	n.addVF(pciA)
	n.network("rdma-a", "192.168.210.0/24", nil)
	for round := range 4 {
		podA, podB := netnstest.NewNetns(t, fmt.Sprint("a", round)), netnstest.NewNetns(t, fmt.Sprint("b", round))
		if _, err := n.cnitool("add", "rdma-a", podA, pciA); err != nil {
			t.Fatal(err)
		}
		var delErr, addErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, delErr = n.cnitool("del", "rdma-a", podA, pciA) }()
		go func() { defer wg.Done(); _, addErr = n.cnitool("add", "rdma-a", podB, pciA) }()
		wg.Wait()
		if delErr != nil {
			t.Fatalf("round %d: del: %v", round, delErr)
		}
		if links := podLinks(t, podA); len(links) != 0 {
			t.Fatalf("round %d: released pod still has %v", round, links)
		}
		linksB := podLinks(t, podB)
		if addErr == nil && !slices.Equal(linksB, []string{"net1"}) {
			t.Fatalf("round %d: ADD succeeded but pod B has %v", round, linksB)
		}
		if addErr != nil && len(linksB) != 0 {
			t.Fatalf("round %d: failed ADD left %v", round, linksB)
		}
		t.Logf("round %d: ADD %v", round, addErr == nil)
		if _, err := n.cnitool("del", "rdma-a", podB, pciA); err != nil {
			t.Fatal(err)
		}
		n.assertHome(pciA)
	}
}
