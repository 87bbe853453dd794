package pciaddr

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
)

// Addr is a PCI function address. The zero value is 0000:00:00.0. An Addr
// from a parser always has Device <= 0x1f and Function <= 7; one built by
// hand may not (see Valid).
type Addr struct {
	Domain   uint32
	Bus      uint8
	Device   uint8 // the slot, 0 to 0x1f
	Function uint8 // 0 to 7
}

// ErrInvalid is wrapped by every error this package returns.
var ErrInvalid = errors.New("invalid PCI address")

// Error says why a string is not a PCI address or host bridge name.
type Error struct {
	Input  string // the input, cut to 64 bytes
	Reason string // "device 0x20 is above 0x1f"
	what   string // "PCI address", "PCI host bridge"
}

func (e *Error) Error() string {
	q := strconv.Quote(e.Input)
	if len(e.Input) == maxQuoted {
		q += "..."
	}
	what := e.what
	if what == "" {
		what = "PCI address"
	}
	return what + " " + q + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

// maxQuoted bounds how much of a bad input an error repeats: inputs can be
// hostile (a CNI config, a file name in a crafted tree).
const maxQuoted = 64

func newError(what, s, reason string) *Error {
	if len(s) > maxQuoted {
		s = s[:maxQuoted]
	}
	return &Error{Input: s, Reason: reason, what: what}
}

// Parse reads a full address "DDDD:BB:DD.F" in either case with a domain of
// 4 to 8 hex digits ("0000:1b:00.0", "10000:e1:00.1", nvidia-smi's
// "00000000:1B:00.0"). It trims nothing: callers trim what their input
// format allows.
func Parse(s string) (Addr, error) {
	if a, ok := parse(s); ok {
		return a, nil
	}
	return Addr{}, newError("PCI address", s, diagnose(s, false))
}

// ParseOptionalDomain is Parse that also accepts the short form "BB:DD.F",
// meaning domain 0000.
func ParseOptionalDomain(s string) (Addr, error) {
	if len(s) == len("BB:DD.F") {
		if bus, dev, fn, acc := scanBDF(s); acc&invalid == 0 {
			return Addr{Bus: bus, Device: dev, Function: fn}, nil
		}
		return Addr{}, newError("PCI address", s, diagnose(s, true))
	}
	if a, ok := parse(s); ok {
		return a, nil
	}
	return Addr{}, newError("PCI address", s, diagnose(s, true))
}

// ParseCanonical reads only the canonical form, the one String prints and
// sysfs names functions with: lower case, a four-digit domain or a wider one
// without a leading zero. It does not allocate.
func ParseCanonical(s string) (Addr, bool) {
	if len(s) != len("DDDD:BB:DD.F") {
		a, canonical, ok := scan(s)
		return a, ok && canonical
	}
	// A four-digit domain, nearly every address: fixed offsets, no loop and
	// no further call, for the lookup of every device ID kubelet offers.
	if s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return Addr{}, false
	}
	d0, d1, d2, d3 := hexVal[s[0]], hexVal[s[1]], hexVal[s[2]], hexVal[s[3]]
	b0, b1, v0, v1, f := hexVal[s[5]], hexVal[s[6]], hexVal[s[8]], hexVal[s[9]], hexVal[s[11]]
	if (d0|d1|d2|d3|b0|b1|v0|v1|f)&(invalid|upper) != 0 || v0 > 1 || f > 7 {
		return Addr{}, false
	}
	return Addr{
		Domain:   uint32(d0)<<12 | uint32(d1)<<8 | uint32(d2)<<4 | uint32(d3),
		Bus:      b0<<4 | b1,
		Device:   v0<<4 | v1,
		Function: f,
	}, true
}

// IsCanonical reports whether s is an address in canonical form, exactly as
// the kernel names the function in sysfs.
func IsCanonical(s string) bool {
	_, ok := ParseCanonical(s)
	return ok
}

// Normalize returns the canonical form of a full address given in any
// accepted form (see Parse).
func Normalize(s string) (string, error) {
	a, err := Parse(s)
	if err != nil {
		return "", err
	}
	return a.String(), nil
}

// Valid reports whether a's device and function are in range.
func (a Addr) Valid() bool { return a.Device <= 0x1f && a.Function <= 7 }

// String prints the canonical form, "0000:1b:00.0".
func (a Addr) String() string {
	var buf [20]byte
	return string(a.Append(buf[:0]))
}

// Append appends the canonical form of a to b.
func (a Addr) Append(b []byte) []byte {
	b = appendDomain(b, a.Domain)
	b = append(b, ':', hexDigits[a.Bus>>4], hexDigits[a.Bus&15], ':', hexDigits[a.Device>>4], hexDigits[a.Device&15], '.')
	if a.Function > 15 { // not Valid: print it whole rather than wrong
		b = append(b, hexDigits[a.Function>>4])
	}
	return append(b, hexDigits[a.Function&15])
}

// Compare orders addresses numerically: by domain, bus, device, function.
// It returns -1, 0 or +1, as cmp.Compare does.
func (a Addr) Compare(b Addr) int { return cmp.Compare(a.key(), b.key()) }

func (a Addr) key() uint64 {
	return uint64(a.Domain)<<24 | uint64(a.Bus)<<16 | uint64(a.Device)<<8 | uint64(a.Function)
}

// RID returns the function's routing ID within its domain,
// bus<<8 | device<<3 | function, as SR-IOV's VF offset and stride count.
func (a Addr) RID() uint16 {
	return uint16(a.Bus)<<8 | uint16(a.Device&0x1f)<<3 | uint16(a.Function&7)
}

// FromRID is the address of routing ID rid in domain.
func FromRID(domain uint32, rid uint16) Addr {
	return Addr{Domain: domain, Bus: uint8(rid >> 8), Device: uint8(rid>>3) & 0x1f, Function: uint8(rid) & 7}
}

// CompareStrings orders strings as addresses: those Parse accepts
// numerically (ties between spellings of one address by bytes), before any
// that it does not, which sort by bytes. It is a total order, for sorting
// lists that should hold addresses but might not. It does not allocate.
func CompareStrings(a, b string) int {
	x, okA := parse(a)
	y, okB := parse(b)
	switch {
	case okA && okB:
		if c := x.Compare(y); c != 0 {
			return c
		}
	case okA:
		return -1
	case okB:
		return +1
	}
	return cmp.Compare(a, b)
}

// SortByAddress sorts xs in CompareStrings order of addr(x), parsing each
// address once rather than at every comparison.
func SortByAddress[T any](xs []T, addr func(T) string) {
	const notAddr = 1 << 63 // after every key: Addr.key has 56 bits
	type keyed struct {
		k uint64
		i int32
	}
	ks := make([]keyed, len(xs))
	for i, x := range xs {
		ks[i] = keyed{notAddr, int32(i)}
		if a, ok := parse(addr(x)); ok {
			ks[i].k = a.key()
		}
	}
	slices.SortFunc(ks, func(p, q keyed) int {
		if c := cmp.Compare(p.k, q.k); c != 0 {
			return c
		}
		return cmp.Compare(addr(xs[p.i]), addr(xs[q.i])) // two spellings, or two non-addresses
	})
	// Move xs[ks[j].i] to xs[j], one cycle of the permutation at a time,
	// marking each place done with ks[j].i = j.
	for j := range ks {
		if int(ks[j].i) == j {
			continue
		}
		tmp, k := xs[j], j
		for {
			next := int(ks[k].i)
			ks[k].i = int32(k)
			if next == j {
				xs[k] = tmp
				break
			}
			xs[k] = xs[next]
			k = next
		}
	}
}

const hexDigits = "0123456789abcdef"

// appendDomain prints a domain as the kernel does, "%04x".
func appendDomain(b []byte, d uint32) []byte {
	n := 4
	for n < 8 && d>>(4*n) != 0 {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, hexDigits[d>>(4*i)&15])
	}
	return b
}

// Bits of hexVal's entries and of what scans OR together.
const (
	upper   = 0x10 // an upper-case hex digit
	invalid = 0x80 // not a hex digit
)

// hexVal maps a byte to its hex value, ORed with upper for 'A'-'F', or to
// 0xff when it is not a hex digit. A constant string of 256 bytes, so
// indexing it with a byte needs no bounds check.
const hexVal = "" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\xff\xff\xff\xff\xff\xff" +
	"\xff\x1a\x1b\x1c\x1d\x1e\x1f\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\x0a\x0b\x0c\x0d\x0e\x0f\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff" +
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"

// parse is Parse without the error: the canonical fast path first, as
// nearly every input is canonical, then any spelling.
func parse(s string) (Addr, bool) {
	if a, ok := ParseCanonical(s); ok {
		return a, true
	}
	a, _, ok := scan(s)
	return a, ok
}

// scan reads a full address; canonical reports whether s is exactly its
// canonical form.
func scan(s string) (a Addr, canonical, ok bool) {
	d := len(s) - len(":BB:DD.F") // digits of the domain
	if d < 4 || d > 8 {
		return Addr{}, false, false
	}
	var acc byte
	for i := 0; i < d; i++ {
		v := hexVal[s[i]]
		acc |= v
		a.Domain = a.Domain<<4 | uint32(v&15)
	}
	if s[d] != ':' {
		return Addr{}, false, false
	}
	bus, dev, fn, acc2 := scanBDF(s[d+1:])
	if acc |= acc2; acc&invalid != 0 {
		return Addr{}, false, false
	}
	a.Bus, a.Device, a.Function = bus, dev, fn
	return a, acc&upper == 0 && (d == 4 || s[0] != '0'), true
}

// scanBDF reads "BB:DD.F"; acc has invalid set when it is not one, upper
// when a digit is upper case.
func scanBDF(r string) (bus, dev, fn uint8, acc byte) {
	if len(r) != 7 || r[2] != ':' || r[5] != '.' {
		return 0, 0, 0, invalid
	}
	b0, b1, d0, d1, f := hexVal[r[0]], hexVal[r[1]], hexVal[r[3]], hexVal[r[4]], hexVal[r[6]]
	acc = b0 | b1 | d0 | d1 | f
	bus = (b0&15)<<4 | b1&15
	dev = (d0&15)<<4 | d1&15
	fn = f & 15
	if dev > 0x1f || fn > 7 {
		acc |= invalid
	}
	return bus, dev, fn, acc
}
