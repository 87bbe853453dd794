package cni

import (
	"testing"

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
	checkAddRefusesTheHostsOwnNetns(w, "/proc/self/ns/net")
}

// TestRollbackMessageSaysWhatIsLeftFakeVF: when IPAM fails on ADD and on
// the rollback's DEL, the device is restored and its record removed, and
// the error says so instead of "record kept for DEL/GC".
func TestRollbackMessageSaysWhatIsLeftFakeVF(t *testing.T) {
	checkRollbackMessageSaysWhatIsLeft(newWorld(t))
}

// TestAddOnAMissingDeviceLeavesNoLockFileFakeVF: a device that does not
// exist is refused before its lock file is created, so configurations
// naming random devices cannot fill the state directory.
func TestAddOnAMissingDeviceLeavesNoLockFileFakeVF(t *testing.T) {
	checkAddOnAMissingDeviceLeavesNoLockFile(newWorld(t))
}
