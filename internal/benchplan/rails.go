package benchplan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Rail is one RDMA resource every benchmark pod requests and the secondary
// network attached for it. Published multi-rail deployments give a pod two
// or more rails, e.g. intel.com/sriov_111 with network sriov-111 and
// intel.com/sriov_112 with sriov-112: Multus attaches one device of the
// network's resource per network.
type Rail struct {
	// Resource is the extended resource of the RDMA pool.
	Resource string
	// Count is how many of Resource each pod requests (0 means 1).
	Count int
	// Network is the NetworkAttachmentDefinition, in Multus's short form
	// "[namespace/]name[@ifname]"; "" attaches no network for this rail.
	Network string
}

// ParseRails pairs repeated --resource and --network values by position.
// A resource may carry its count, "NAME=COUNT"; otherwise defaultCount.
// An empty list takes its single default (DefaultResource,
// DefaultNetwork), so "--resource X" alone keeps DefaultNetwork. After
// that the two lists must have the same length: a network without its
// resource (or the reverse) is an error, not a guess.
func ParseRails(resources, networks []string, defaultCount int) ([]Rail, error) {
	if len(resources) == 0 {
		resources = []string{DefaultResource}
	}
	if len(networks) == 0 {
		networks = []string{DefaultNetwork}
	}
	if len(resources) != len(networks) {
		return nil, fmt.Errorf("%d --resource but %d --network: give one --network per --resource, in the same order "+
			"(--network \"\" for a rail without a secondary network)", len(resources), len(networks))
	}
	var errs []error
	rails := make([]Rail, len(resources))
	for i, r := range resources {
		name, count, hasCount := strings.Cut(r, "=")
		n := defaultCount
		if hasCount {
			v, err := strconv.Atoi(count)
			if err != nil || v < 1 {
				errs = append(errs, fmt.Errorf("--resource %q: the count after '=' must be a positive integer", r))
				continue
			}
			n = v
		}
		rails[i] = Rail{Resource: name, Count: n, Network: networks[i]}
	}
	return rails, errors.Join(errs...)
}

// validateResource checks an extended resource name as the API server
// does: DOMAIN/NAME, a qualified name, outside the kubernetes.io domain
// (Kubernetes' own resources) and not starting with "requests.".
func validateResource(r string) error {
	if msgs := validation.IsQualifiedName(r); len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	domain, _, ok := strings.Cut(r, "/")
	switch {
	case !ok:
		return errors.New("want an extended resource, DOMAIN/NAME (railyard.io/rdma_vf)")
	case domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io"):
		return errors.New("the kubernetes.io domain is Kubernetes' own, not an extended resource")
	case strings.HasPrefix(r, "requests."):
		return errors.New(`an extended resource does not start with "requests."`)
	}
	return nil
}

// validateRails checks resource names, counts and network names, and that
// no resource is requested twice (one request per resource: use Count).
func validateRails(rails []Rail) []error {
	var errs []error
	seen := map[string]bool{}
	for _, r := range rails {
		if err := validateResource(r.Resource); err != nil {
			errs = append(errs, fmt.Errorf("resource %q: %w", r.Resource, err))
		}
		if seen[r.Resource] {
			errs = append(errs, fmt.Errorf("resource %q: given twice; request it once with a count (%s=2)", r.Resource, r.Resource))
		}
		seen[r.Resource] = true
		if r.Count < 0 {
			errs = append(errs, fmt.Errorf("resource %q: count %d: counts must not be negative", r.Resource, r.Count))
		}
		if r.Network != "" {
			if err := validateNetwork(r.Network); err != nil {
				errs = append(errs, fmt.Errorf("network %q: %w", r.Network, err))
			}
		}
	}
	return errs
}

// validateNetwork checks Multus's short network selection form
// "[namespace/]name[@ifname]".
func validateNetwork(s string) error {
	rest, ifname, hasIf := strings.Cut(s, "@")
	ns, name, hasNS := strings.Cut(rest, "/")
	if !hasNS {
		ns, name = "", rest
	}
	var msgs []string
	if hasNS {
		msgs = append(msgs, validation.IsDNS1123Label(ns)...)
	}
	msgs = append(msgs, validation.IsDNS1123Subdomain(name)...)
	if hasIf && (ifname == "" || len(ifname) > 15 || strings.ContainsAny(ifname, "/:@, \t\n")) {
		msgs = append(msgs, "the interface name after '@' must be 1-15 characters without '/', ':' or white space")
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// networksAnnotation is the k8s.v1.cni.cncf.io/networks value: the rails'
// networks in order, comma-separated (Multus's short form).
func networksAnnotation(rails []Rail) string {
	var nets []string
	for _, r := range rails {
		if r.Network != "" {
			nets = append(nets, r.Network)
		}
	}
	return strings.Join(nets, ",")
}

// interfaces are the pod's secondary interface names in annotation order:
// the "@ifname" given, else Multus's default net<position>.
func interfaces(rails []Rail) []string {
	var out []string
	for _, r := range rails {
		if r.Network == "" {
			continue
		}
		name := interfacePrefix + strconv.Itoa(len(out)+1)
		if _, ifname, ok := strings.Cut(r.Network, "@"); ok {
			name = ifname
		}
		out = append(out, name)
	}
	return out
}
