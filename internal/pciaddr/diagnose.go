package pciaddr

import (
	"strconv"
	"strings"
)

// diagnose says why s failed to parse: the first field that is wrong. It
// runs only on failure, so it may allocate.
func diagnose(s string, allowShort bool) string {
	want := "want DDDD:BB:DD.F"
	if allowShort {
		want = "want DDDD:BB:DD.F or BB:DD.F"
	}
	if s == "" {
		return "empty, " + want
	}
	type field struct {
		name   string
		v      string
		lo, hi int
	}
	var fields []field
	parts := strings.SplitN(s, ":", 4)
	switch {
	case len(parts) == 3:
		fields = append(fields, field{"domain", parts[0], 4, 8})
		parts = parts[1:]
	case len(parts) == 2 && allowShort:
	default:
		return want
	}
	dev, fn, ok := strings.Cut(parts[1], ".")
	if !ok {
		return want
	}
	fields = append(fields, field{"bus", parts[0], 2, 2}, field{"device", dev, 2, 2}, field{"function", fn, 1, 1})
	for _, f := range fields {
		if r := hexField(f.name, f.v, f.lo, f.hi); r != "" {
			return r
		}
	}
	if v, _ := strconv.ParseUint(dev, 16, 8); v > 0x1f {
		return "device 0x" + strings.ToLower(dev) + " is above 0x1f"
	}
	if v, _ := strconv.ParseUint(fn, 16, 8); v > 7 {
		return "function " + fn + " is above 7"
	}
	return want
}

// hexField says what is wrong with v, a field of lo to hi hex digits, or "".
func hexField(name, v string, lo, hi int) string {
	if len(v) < lo || len(v) > hi {
		n := strconv.Itoa(lo)
		if hi > lo {
			n += " to " + strconv.Itoa(hi)
		}
		return name + " has " + strconv.Itoa(len(v)) + " characters, want " + n + " hex digits"
	}
	for i := 0; i < len(v); i++ {
		if hexVal[v[i]]&invalid != 0 {
			return name + " is not hex"
		}
	}
	return ""
}
