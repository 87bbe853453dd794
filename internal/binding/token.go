package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Token IDs: "tok-<pool tag>-n<NUMA node>-<k>", NUMA "x" when unknown, e.g.
// "tok-5c0e1f2a-n1-7". The pool tag is the first 8 hex digits of the
// SHA-256 of the resource name, so a token names its pool (Multus passes
// only the device ID to railyard-cni), the same token is never in two
// pools, and the ID is the same after every restart. At most 4+8+2+4+1+5 =
// 24 characters, far below kubelet's 63. A token is never a PCI address
// nor a share ID ("<pci>-s<k>").
const (
	tokenPrefix = "tok-"
	tagLen      = 8
	// MaxTokenIndex bounds k (and a NUMA node number is below MaxNUMA).
	MaxTokenIndex = 99999
	MaxNUMA       = 9999
)

// PoolTag is the tag of a pool's tokens.
func PoolTag(resource string) string {
	h := sha256.Sum256([]byte(resource))
	return hex.EncodeToString(h[:])[:tagLen]
}

// Token returns token k of NUMA node numa (-1: unknown) of the pool with
// tag tag.
func Token(tag string, numa, k int) string {
	n := "x"
	if numa >= 0 {
		n = strconv.Itoa(numa)
	}
	return tokenPrefix + tag + "-n" + n + "-" + strconv.Itoa(k)
}

// TokenID is a parsed token.
type TokenID struct {
	Tag  string
	NUMA int // -1 when unknown
	K    int
}

// IsToken reports whether id has the form of a token.
func IsToken(id string) bool {
	_, err := ParseToken(id)
	return err == nil
}

// ParseToken parses what Token produces and nothing else (no leading zeros,
// lower-case tag), so that a token has one spelling.
func ParseToken(id string) (TokenID, error) {
	bad := func(why string) (TokenID, error) {
		return TokenID{}, fmt.Errorf("device ID %q is not a token (tok-<8 hex>-n<NUMA>-<k>): %s", id, why)
	}
	rest, ok := strings.CutPrefix(id, tokenPrefix)
	if !ok {
		return bad("no tok- prefix")
	}
	if len(rest) < tagLen+2 || rest[tagLen] != '-' || rest[tagLen+1] != 'n' {
		return bad("no pool tag")
	}
	tag := rest[:tagLen]
	for _, c := range []byte(tag) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return bad("pool tag is not lower-case hex")
		}
	}
	numaStr, kStr, ok := strings.Cut(rest[tagLen+2:], "-")
	if !ok {
		return bad("no token index")
	}
	t := TokenID{Tag: tag, NUMA: -1}
	if numaStr != "x" {
		n, ok := smallNumber(numaStr, MaxNUMA)
		if !ok {
			return bad("NUMA node is not a number 0-9999 (or x) without leading zeros")
		}
		t.NUMA = n
	}
	k, ok := smallNumber(kStr, MaxTokenIndex)
	if !ok {
		return bad("token index is not a number 0-99999 without leading zeros")
	}
	t.K = k
	return t, nil
}

// smallNumber parses a decimal without sign or leading zeros, at most max.
func smallNumber(s string, max int) (int, bool) {
	if s == "" || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= max
}

// String returns the token's ID.
func (t TokenID) String() string { return Token(t.Tag, t.NUMA, t.K) }
