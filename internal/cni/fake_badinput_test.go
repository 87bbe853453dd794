package cni

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/netops"
)

// TestAddRefusesTheHostsOwnNetnsByIdentityFakeVF: CNI_NETNS naming the
// host's own namespace under another path (/proc/self/ns/net) is refused
// before anything changes; comparing paths let ADD rename the host's
// netdev in the host.
func TestAddRefusesTheHostsOwnNetnsByIdentityFakeVF(t *testing.T) {
	w := newWorld(t)
	w.ops.AddNetns("/proc/self/ns/net")
	w.ops.AliasNetns("/proc/self/ns/net", netops.Host)
	_, err := w.plugin().Add(ctx, args("c1", "/proc/self/ns/net", "net1", w.conf(vfPCI, nil)))
	if code := ToCNIError(err).Code; code != types.ErrInvalidEnvironmentVariables || !strings.Contains(err.Error(), "host's own") {
		t.Fatalf("ADD into the host's namespace: code %d, %v", code, err)
	}
	w.assertPristine()
}

// TestRollbackMessageSaysWhatIsLeftFakeVF: when IPAM fails on ADD and on
// the rollback's DEL, the device is restored and its record removed, and
// the error says so instead of "record kept for DEL/GC".
func TestRollbackMessageSaysWhatIsLeftFakeVF(t *testing.T) {
	w := newWorld(t)
	w.ipam.fail["ADD"] = errors.New("failed to find plugin \"nosuchipam\"")
	w.ipam.fail["DEL"] = errors.New("failed to find plugin \"nosuchipam\"")
	_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", w.conf(vfPCI, nil)))
	if err == nil {
		t.Fatal("ADD succeeded")
	}
	if strings.Contains(err.Error(), "record kept") || !strings.Contains(err.Error(), "device restored") {
		t.Errorf("error %q", err)
	}
	delete(w.ipam.fail, "DEL")
	w.assertPristine()
}

// TestAddOnAMissingDeviceLeavesNoLockFileFakeVF: a device that does not
// exist is refused before its lock file is created, so configurations
// naming random devices cannot fill the state directory.
func TestAddOnAMissingDeviceLeavesNoLockFileFakeVF(t *testing.T) {
	w := newWorld(t)
	for _, conf := range [][]byte{
		w.conf("0000:99:00.7", nil),
		w.conf("", map[string]any{"deviceID": nil, "device": "nosuchnic0", "vlan": nil, "vlanQoS": nil,
			"spoofchk": nil, "trust": nil, "link_state": nil, "min_tx_rate": nil, "max_tx_rate": nil, "rdma": false}),
	} {
		_, err := w.plugin().Add(ctx, args("c1", pod1, "net1", conf))
		if code := ToCNIError(err).Code; code != types.ErrInvalidNetworkConfig {
			t.Errorf("ADD on a missing device: code %d, %v", code, err)
		}
	}
	if locks, _ := os.ReadDir(filepath.Join(w.stateDir, "locks")); len(locks) != 0 {
		t.Errorf("lock files left: %v", locks)
	}
}
