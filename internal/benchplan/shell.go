package benchplan

import (
	"fmt"
	"net"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// shellSafe matches words sh passes through unchanged.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// perftestBinary matches the perftest binaries (ib_write_bw, ib_read_lat,
// ib_atomic_bw, ...).
var perftestBinary = regexp.MustCompile(`^ib_[a-z_]+$`)

// shellWord quotes s for sh -c: unchanged when it holds only characters
// sh does not interpret, otherwise in single quotes (a single quote
// inside becomes quote, backslash, quote, quote). Every user-given value
// in a command line passes through it, so "1.2.3.4; id #" stays one
// argument.
func shellWord(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellLine quotes every word and joins them with spaces.
func shellLine(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellWord(w)
	}
	return strings.Join(q, " ")
}

// validateAddress accepts an IP address or a DNS name (a Service name,
// a host name): what perftest and iperf3 take as the server.
func validateAddress(s string) error {
	if net.ParseIP(s) != nil {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
		return fmt.Errorf("server address %q: want an IP address or a DNS name: %s", s, strings.Join(msgs, "; "))
	}
	return nil
}

// validateNodes checks node names: DNS subdomains (as the API requires of
// a Node's name) and valid label values, since they go into the
// kubernetes.io/hostname node selector.
func validateNodes(nodes []string) []error {
	var errs []error
	for i, n := range nodes {
		var msgs []string
		msgs = append(msgs, validation.IsDNS1123Subdomain(n)...)
		msgs = append(msgs, validation.IsValidLabelValue(n)...)
		if len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("nodes[%d] %q: want a node name usable as a label value: %s", i, n, strings.Join(msgs, "; ")))
		}
	}
	return errs
}
