package pool

import (
	"fmt"
	"strconv"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

// shareSep separates a PF's PCI address from the share index in a share's
// device ID. PCI addresses contain ':' and '.', never "-s".
const shareSep = "-s"

// ShareID is the device ID of share k of the PF at pci: "0000:18:00.0-s3".
// It names the PF, is the same after every restart, and stays far below
// kubelet's 63 characters (at most 17 for a 4-digit domain and share 999).
func ShareID(pci string, k int) string { return pci + shareSep + strconv.Itoa(k) }

// ParseShareID splits a share's device ID into the PF's PCI address and
// the share index. It fails on anything ShareID does not produce. It is on
// the GetPreferredAllocation path (thousands of IDs), so it does not
// allocate on success.
func ParseShareID(id string) (pci string, k int, err error) {
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

// shares returns n shares of the PF device pf, each with its health.
func shares(pf Device, n int) []Device {
	out := make([]Device, n)
	for k := range out {
		d := pf
		d.ID, d.Kind, d.Share = ShareID(pf.PF, k), v1alpha1.KindShared, k
		out[k] = d
	}
	return out
}
