package migrate

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

// ErrNoPools is returned (with the report) when no resource of the input
// can be served by Railyard.
var ErrNoPools = errors.New("no resource could be converted to a pool")

// Options tune the conversion.
type Options struct {
	// ResourcePrefix is the prefix of resources without their own, as the
	// plugin's --resource-prefix flag set it ("" = DefaultResourcePrefix).
	ResourcePrefix string
	// DeviceKind forces every pool's kind ("vf" or "pf"); "" infers it
	// from the selectors.
	DeviceKind string
	// Key chooses the configuration to convert when the input holds
	// several (a ConfigMap's per-node keys, several ConfigMaps): a data
	// key, or CONFIGMAP/KEY.
	Key string
}

// ConvertSRIOVDP converts the SR-IOV network device plugin's config.json
// (or a ConfigMap holding it) to an agent configuration with one pool per
// resource Railyard can serve. The configuration is complete and validated
// even when the report says something was dropped; with no pool at all it
// returns ErrNoPools and the report. Input the plugin would refuse returns
// an error wrapping ErrInvalid and no report.
func ConvertSRIOVDP(data []byte, opts Options) (*v1alpha1.AgentConfig, *Report, error) {
	if opts.ResourcePrefix == "" {
		opts.ResourcePrefix = DefaultResourcePrefix
	}
	if opts.DeviceKind != "" && opts.DeviceKind != v1alpha1.KindVF && opts.DeviceKind != v1alpha1.KindPF {
		return nil, nil, fmt.Errorf("device kind %q: want vf or pf", opts.DeviceKind)
	}
	c, ignored, err := decode(data, opts.Key)
	if err != nil {
		return nil, nil, err
	}
	resources, err := check(c, opts.ResourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	r := &Report{Resources: len(resources)}
	for _, k := range ignored {
		if strings.EqualFold(k, "resourcePrefix") {
			r.add("", k, Note, "ignored, as the plugin ignores it: config.json has no global prefix (the plugin takes it "+
				"from its --resource-prefix flag, default %s); resources without their own prefix use %q (--resource-prefix)",
				DefaultResourcePrefix, opts.ResourcePrefix)
			continue
		}
		r.add("", k, Note, "ignored, as the plugin ignores unknown keys")
	}
	cfg := &v1alpha1.AgentConfig{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind}
	for _, res := range resources {
		if p, ok := convertResource(r, res, opts); ok {
			cfg.Pools = append(cfg.Pools, p)
		}
	}
	r.Pools = len(cfg.Pools)
	if len(cfg.Pools) == 0 {
		return nil, r, ErrNoPools
	}
	r.add("", "policy", Note, "every pool gets policy gpu-aware (Railyard's default): the plugin had no preference and "+
		"kubelet chose devices by NUMA node only; use spread or packed to ignore GPUs")
	if len(cfg.Pools) > 1 {
		r.add("", "resourceList", Note, "the plugin gave a device to the first resource that selected it; Railyard serves a "+
			"device in every pool that selects it and logs \"pools overlap\": make the pools disjoint")
	}
	for _, p := range cfg.Pools {
		if p.DeviceKind == v1alpha1.KindPF {
			r.add("", "deviceKind", Note, "the plugin never handed out a PF carrying the host's default route; Railyard does "+
				"not look at routes: keep the node's management NIC out of the pf pools' selectors")
			break
		}
	}
	if _, err := Marshal(cfg); err != nil {
		return nil, nil, err
	}
	return cfg, r, nil
}

// resource is one checked resourceList entry.
type resource struct {
	dpResource
	name      string // <prefix>/<resourceName>
	selectors []dpSelector
	ignored   []string   // resource keys the plugin ignores
	unknown   [][]string // per selector object, the keys the plugin ignores
	list      bool       // selectors given as a list
}

// check rejects what the plugin would refuse: an unknown deviceType, an
// invalid or duplicate resource name, selectors that do not parse, and
// isRdma with vdpaType. It returns every problem at once.
func check(c *dpConfig, prefix string) ([]resource, error) {
	if len(c.ResourceList) == 0 {
		return nil, fmt.Errorf("%w: resourceList is empty: nothing to convert", ErrInvalid)
	}
	var errs []error
	seen := map[string]int{}
	out := make([]resource, 0, len(c.ResourceList))
	for i, dr := range c.ResourceList {
		at := fmt.Sprintf("resourceList[%d]", i)
		if dr.DeviceType == "" {
			dr.DeviceType = dpNetDevice
		}
		if _, ok := selectorKeys[dr.DeviceType]; !ok {
			errs = append(errs, fmt.Errorf("%s.deviceType %q: want netDevice, accelerator or auxNetDevice", at, dr.DeviceType))
			continue
		}
		if !dpResourceName.MatchString(dr.ResourceName) {
			errs = append(errs, fmt.Errorf("%s.resourceName %q: the plugin wants letters, digits, '_' and '-' only", at, dr.ResourceName))
			continue
		}
		p := prefix
		if dr.ResourcePrefix != "" {
			p = dr.ResourcePrefix
		}
		res := resource{dpResource: dr, name: p + "/" + dr.ResourceName}
		if i < len(c.unknown) {
			res.ignored = c.unknown[i]
		}
		if j, dup := seen[res.name]; dup {
			errs = append(errs, fmt.Errorf("%s: resource %s is also resourceList[%d]", at, res.name, j))
			continue
		}
		seen[res.name] = i
		sels, keys, err := selectorObjects(dr.Selectors, dr.DeviceType)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", at, res.name, err))
			continue
		}
		res.selectors = sels
		for _, k := range keys {
			res.unknown = append(res.unknown, unknownKeys(k, selectorKeys[dr.DeviceType]))
		}
		res.list = isList(*dr.Selectors)
		for j, s := range sels {
			if s.IsRdma && s.VdpaType != "" && dr.DeviceType == dpNetDevice {
				errs = append(errs, fmt.Errorf("%s (%s): selectors[%d]: isRdma and vdpaType exclude each other", at, res.name, j))
			}
		}
		out = append(out, res)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w:\n%w", ErrInvalid, err)
	}
	return out, nil
}

func isList(raw []byte) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "[")
}

// selectorField names selector object i as the input did.
func (res resource) selectorField(i int) string {
	if !res.list {
		return "selectors"
	}
	return fmt.Sprintf("selectors[%d]", i)
}

// Marshal renders an agent configuration as YAML that the agent's own
// loader accepts, and checks that it does.
func Marshal(cfg *v1alpha1.AgentConfig) ([]byte, error) {
	y, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("marshal agent configuration: %w", err)
	}
	if _, err := v1alpha1.Parse(y); err != nil {
		return nil, fmt.Errorf("internal error: the converted configuration does not load: %w", err)
	}
	return y, nil
}
