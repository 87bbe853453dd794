package benchplan

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Rail is one RDMA resource every benchmark pod requests and the secondary
// network attached for it. Published multi-rail deployments give a pod two
// or more rails, e.g. intel.com/sriov_111 with network sriov-111 and
// intel.com/sriov_112 with sriov-112: Multus attaches one device of the
// network's resource per network. A rail names either an extended resource
// (a device plugin's pool) or a DRA DeviceClass, never both.
type Rail struct {
	// Resource is the extended resource of the RDMA pool.
	Resource string
	// DeviceClass is the resource.k8s.io DeviceClass the rail's devices are
	// claimed from: the pods of a run share one ResourceClaimTemplate
	// (ClaimTemplateName) with one request per such rail.
	DeviceClass string
	// Count is how many of Resource, or devices of DeviceClass, each pod
	// requests (0 means 1).
	Count int
	// Network is the NetworkAttachmentDefinition, in Multus's short form
	// "[namespace/]name[@ifname]"; "" attaches no network for this rail
	// (a DRA rail's NIC is then attached by the container runtime's
	// chained CNI configuration, docs/dra.md).
	Network string
}

// what names the rail in errors: its resource or device class.
func (r Rail) what() string {
	if r.DeviceClass != "" {
		return fmt.Sprintf("device class %q", r.DeviceClass)
	}
	return fmt.Sprintf("resource %q", r.Resource)
}

// ParseRails builds rails from repeated --resource, --device-class and
// --network values: the --resource rails first, then the --device-class
// ones, each NAME or NAME=COUNT (otherwise defaultCount), and the networks
// pair with that combined list by position.
//
// Without --device-class, an empty --resource list takes its single
// default (DefaultResource) and an empty --network list DefaultNetwork,
// so "--resource X" alone keeps DefaultNetwork. With --device-class no
// default resource is added, and without --network no rail gets a network
// (a DRA rail's NIC comes from the runtime's chained CNI configuration).
// Given networks must number the rails: a network without its rail (or the
// reverse) is an error, not a guess.
func ParseRails(resources, deviceClasses, networks []string, defaultCount int) ([]Rail, error) {
	if len(deviceClasses) == 0 {
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
	}
	n := len(resources) + len(deviceClasses)
	if len(networks) == 0 {
		networks = make([]string, n)
	}
	if len(networks) != n {
		return nil, fmt.Errorf("%d --resource and %d --device-class but %d --network: give one --network per rail, "+
			"the --resource rails first, then the --device-class ones (--network \"\" for a rail without a secondary network)",
			len(resources), len(deviceClasses), len(networks))
	}
	var errs []error
	rails := make([]Rail, n)
	for i, r := range resources {
		name, count, err := parseCount("--resource", r, defaultCount)
		errs = append(errs, err)
		rails[i] = Rail{Resource: name, Count: count, Network: networks[i]}
	}
	for i, c := range deviceClasses {
		j := len(resources) + i
		name, count, err := parseCount("--device-class", c, defaultCount)
		errs = append(errs, err)
		rails[j] = Rail{DeviceClass: name, Count: count, Network: networks[j]}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rails, nil
}

// parseCount splits a flag's NAME[=COUNT] value.
func parseCount(flag, s string, defaultCount int) (string, int, error) {
	name, count, hasCount := strings.Cut(s, "=")
	if !hasCount {
		return name, defaultCount, nil
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return name, 0, fmt.Errorf("%s %q: the count after '=' must be a positive integer", flag, s)
	}
	return name, n, nil
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

// validateRails checks that each rail names one resource or device class,
// their names, counts and network names, that no resource is requested
// twice (one request per resource: use Count), and that the DRA rails fit
// in one claim.
func validateRails(rails []Rail) []error {
	var errs []error
	seen := map[string]bool{}
	claimed := 0
	for i, r := range rails {
		switch {
		case r.Resource != "" && r.DeviceClass != "":
			errs = append(errs, fmt.Errorf("rail %d: resource %q and device class %q: give one, an extended resource or a DRA DeviceClass",
				i, r.Resource, r.DeviceClass))
		case r.Resource == "" && r.DeviceClass == "":
			errs = append(errs, fmt.Errorf("rail %d: no resource or device class", i))
		case r.DeviceClass != "":
			if msgs := validation.IsDNS1123Subdomain(r.DeviceClass); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("device class %q: %s", r.DeviceClass, strings.Join(msgs, "; ")))
			}
			claimed += max(r.Count, 1)
		default:
			if err := validateResource(r.Resource); err != nil {
				errs = append(errs, fmt.Errorf("resource %q: %w", r.Resource, err))
			}
			if seen[r.Resource] {
				errs = append(errs, fmt.Errorf("resource %q: given twice; request it once with a count (%s=2)", r.Resource, r.Resource))
			}
			seen[r.Resource] = true
		}
		if r.Count < 0 {
			errs = append(errs, fmt.Errorf("%s: count %d: counts must not be negative", r.what(), r.Count))
		}
		if r.Network != "" {
			if err := validateNetwork(r.Network); err != nil {
				errs = append(errs, fmt.Errorf("network %q: %w", r.Network, err))
			}
		}
	}
	if claimed > resourceapi.AllocationResultsMaxSize {
		errs = append(errs, fmt.Errorf("device classes: %d devices in one claim, the API allows %d", claimed, resourceapi.AllocationResultsMaxSize))
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
