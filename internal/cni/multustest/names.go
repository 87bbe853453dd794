package multustest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Selection is one network a pod asks for in its
// k8s.v1.cni.cncf.io/networks annotation (multus-cni's
// NetworkSelectionElement: the fields that name the network).
type Selection struct {
	Name             string `json:"name"`
	Namespace        string `json:"namespace,omitempty"`
	InterfaceRequest string `json:"interface,omitempty"`
}

// dns1123Label is the pattern parsePodNetworkObjectName checks the
// namespace and name of a comma-list item against.
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseNetworks reads a pod's networks annotation as Multus does
// (k8sclient's parsePodNetworkAnnotation and parsePodNetworkObjectName): a
// JSON list of selection elements when it holds any of `[{"`, otherwise a
// comma-separated list of "[<namespace>/]<name>[@<ifname>]" items, each
// part trimmed and checked to be a DNS-1123 label; an element without a
// namespace is in the pod's.
func ParseNetworks(annotation, podNamespace string) ([]Selection, error) {
	if annotation == "" {
		return nil, fmt.Errorf("empty networks annotation")
	}
	var sels []Selection
	if strings.ContainsAny(annotation, `[{"`) {
		if err := json.Unmarshal([]byte(annotation), &sels); err != nil {
			return nil, fmt.Errorf("networks annotation JSON: %w", err)
		}
	} else {
		for _, item := range strings.Split(annotation, ",") {
			s, err := parseObjectName(strings.TrimSpace(item))
			if err != nil {
				return nil, err
			}
			sels = append(sels, s)
		}
	}
	for i := range sels {
		if sels[i].Namespace == "" {
			sels[i].Namespace = podNamespace
		}
	}
	return sels, nil
}

// parseObjectName is parsePodNetworkObjectName.
func parseObjectName(item string) (Selection, error) {
	var s Selection
	slash := strings.Split(item, "/")
	switch len(slash) {
	case 2:
		s.Namespace, s.Name = strings.TrimSpace(slash[0]), slash[1]
	case 1:
		s.Name = slash[0]
	default:
		return s, fmt.Errorf("network %q: invalid (failed at '/')", item)
	}
	at := strings.Split(s.Name, "@")
	s.Name = strings.TrimSpace(at[0])
	switch len(at) {
	case 2:
		s.InterfaceRequest = strings.TrimSpace(at[1])
	case 1:
	default:
		return s, fmt.Errorf("network %q: invalid (failed at '@')", item)
	}
	for _, part := range []string{s.Namespace, s.Name} {
		if part != "" && !dns1123Label.MatchString(part) {
			return s, fmt.Errorf("network %q: %q is not a DNS-1123 label", item, part)
		}
	}
	if len(s.InterfaceRequest) > 15 || strings.ContainsAny(s.InterfaceRequest, " \t\n\v\f\r/") {
		return s, fmt.Errorf("network %q: invalid interface name %q", item, s.InterfaceRequest)
	}
	return s, nil
}

// DelegateName is the name Multus gives the delegate of conf (a network
// config or a conflist): the config's own "name" (a conflist's name), which
// LoadDelegateNetConf (and LoadDelegateNetConfFromConfList) overwrite with
// "<namespace>/<name>" of the network selection element whenever the
// delegate comes from a NetworkAttachmentDefinition. sel is nil for a
// delegate read from a file (a cluster network given by path), which keeps
// the config's name. The device-info file's name starts with it.
func DelegateName(conf []byte, sel *Selection) (string, error) {
	var c struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(conf, &c); err != nil {
		return "", fmt.Errorf("network config: %w", err)
	}
	if sel != nil && sel.Name != "" {
		return sel.Namespace + "/" + sel.Name, nil
	}
	return c.Name, nil
}
