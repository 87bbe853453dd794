package deviceid

import (
	"fmt"
	"strconv"
)

// shareSep separates a PF's PCI address from the share index in a share's
// device ID. PCI addresses contain ':' and '.', never "-s".
const shareSep = "-s"

// Share is the device ID of share k of the PF at pci: "0000:18:00.0-s3".
// It names the PF, is the same after every restart, and stays far below
// kubelet's 63 characters.
func Share(pci string, k int) string { return pci + shareSep + strconv.Itoa(k) }

// IsShare reports whether id has the form of a share's device ID.
func IsShare(id string) bool {
	_, _, err := ParseShare(id)
	return err == nil
}

// ParseShare splits a share's device ID into the PF's PCI address and the
// share index (0..9999, no leading zeros). It checks the "-s<k>" suffix
// only: the PF part is returned as written and is not checked here, since
// the agent parses IDs it made itself on the GetPreferredAllocation path
// (thousands per call: checking each address made
// BenchmarkPreferShares8x1000 measurably slower). Callers with
// untrusted input check it with internal/pciaddr, as railyard-cni's config
// does. It does not allocate on success.
func ParseShare(id string) (pci string, k int, err error) {
	j := len(id)
	for j > 0 && id[j-1] >= '0' && id[j-1] <= '9' {
		j--
	}
	num := id[j:]
	i := j - len(shareSep)
	switch {
	case i <= 0 || id[i:j] != shareSep:
		return "", 0, fmt.Errorf("device ID %q is not <pci>%s<share>", id, shareSep)
	case num == "" || len(num) > 4 || (len(num) > 1 && num[0] == '0'):
		return "", 0, fmt.Errorf("device ID %q: share %q is not a number 0-9999 without leading zeros", id, num)
	}
	for _, c := range []byte(num) {
		k = k*10 + int(c-'0')
	}
	return id[:i], k, nil
}
