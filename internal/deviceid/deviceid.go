package deviceid

import (
	"fmt"
	"strconv"
	"strings"
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
// share index (0..9999, no leading zeros). It fails on anything Share does
// not produce.
func ParseShare(id string) (pci string, k int, err error) {
	i := strings.LastIndex(id, shareSep)
	if i <= 0 {
		return "", 0, fmt.Errorf("device ID %q is not <pci>%s<share>", id, shareSep)
	}
	num := id[i+len(shareSep):]
	if num == "" || strings.TrimLeft(num, "0123456789") != "" || (len(num) > 1 && num[0] == '0') || len(num) > 4 {
		return "", 0, fmt.Errorf("device ID %q: share %q is not a number", id, num)
	}
	k, err = strconv.Atoi(num)
	if err != nil {
		return "", 0, fmt.Errorf("device ID %q: %w", id, err)
	}
	return id[:i], k, nil
}
