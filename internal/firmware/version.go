package firmware

import (
	"strconv"
	"strings"
)

// Version is a parsed firmware release, ConnectX style: the model's
// family, the release and the sub-release ("28.39.1002").
type Version [3]int

// ParseVersion reads "28.39.1002" (white space around it allowed, as
// sysfs fw_ver ends in a newline); anything else does not parse.
func ParseVersion(s string) (Version, bool) {
	var v Version
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 9 || strings.Trim(p, "0123456789") != "" {
			return v, false // digits only: no sign, no space
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

// Compare returns -1, 0 or 1 as v is older than, the same as, or newer
// than w.
func (v Version) Compare(w Version) int {
	for i := range v {
		if v[i] != w[i] {
			if v[i] < w[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
