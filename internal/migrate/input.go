package migrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Bounds of the input: real configurations are a few KiB with a handful
// of resources.
const (
	MaxInput     = 1 << 20
	MaxResources = 1024
)

// pluginKey is the ConfigMap key the plugin reads (its config file).
const pluginKey = "config.json"

// config is one plugin configuration found in the input.
type config struct {
	// name says where it is: "config.json of ConfigMap sriovdp-config",
	// "key node-a of ConfigMap device-plugin-config", "document 2".
	name string
	// key is the ConfigMap key it was under ("" for a bare config.json),
	// and path "<configmap>/<key>": what Options.Key matches.
	key, path string
	json      []byte
}

// configs finds every plugin configuration in data: a config.json itself,
// or a ConfigMap's config.json, or, in a ConfigMap without one (the SR-IOV
// network operator keeps one key per node), each of its keys; in each
// document of a multi-document YAML file and each item of a v1 List.
func configs(data []byte) ([]config, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []config
	for n := 1; ; n++ {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrInvalid, n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		found, err := docConfigs(doc, fmt.Sprintf("document %d", n))
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
}

// object is what configs reads of a Kubernetes object.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data  map[string]string `json:"data"`
	Items []any             `json:"items"`
}

// docConfigs reads one document: a ConfigMap, a List of them, or else a
// config.json as it is.
func docConfigs(doc []byte, where string) ([]config, error) {
	var o object
	if err := yaml.Unmarshal(doc, &o); err != nil {
		if t := bytes.TrimSpace(doc); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return []config{{name: where, json: doc}}, nil // JSON: the plugin's decoder says what is wrong
		}
		// Not JSON, and not YAML either: say so with YAML's line, not
		// as a JSON error at line 1.
		return nil, fmt.Errorf("%w: %s: not YAML (a ConfigMap) nor the plugin's JSON: %w", ErrInvalid, where, err)
	}
	if o.Kind == "" {
		return []config{{name: where, json: doc}}, nil
	}
	switch {
	case o.Kind == "ConfigMap":
		return configMapConfigs(o)
	case strings.HasSuffix(o.Kind, "List"):
		var out []config
		for i, item := range o.Items {
			b, err := yaml.Marshal(item)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: items[%d]: %w", ErrInvalid, where, i, err)
			}
			var it object
			if err := yaml.Unmarshal(b, &it); err != nil || it.Kind != "ConfigMap" {
				return nil, fmt.Errorf("%w: %s: items[%d] is a %q, not a ConfigMap", ErrInvalid, where, i, it.Kind)
			}
			found, err := configMapConfigs(it)
			if err != nil {
				return nil, err
			}
			out = append(out, found...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %s is a %s, not the plugin's config.json, its ConfigMap or a List of ConfigMaps", ErrInvalid, where, o.Kind)
}

// configMapConfigs is a ConfigMap's config.json, or each of its keys when
// it has none.
func configMapConfigs(o object) ([]config, error) {
	cm := o.Metadata.Name
	if c, ok := o.Data[pluginKey]; ok {
		return []config{{name: pluginKey + " of ConfigMap " + cm, key: pluginKey, path: cm + "/" + pluginKey, json: []byte(c)}}, nil
	}
	if len(o.Data) == 0 {
		return nil, fmt.Errorf("%w: ConfigMap %s has no data", ErrInvalid, cm)
	}
	var out []config
	for _, k := range slices.Sorted(maps.Keys(o.Data)) {
		out = append(out, config{name: "key " + k + " of ConfigMap " + cm, key: k, path: cm + "/" + k, json: []byte(o.Data[k])})
	}
	return out, nil
}

// choose picks the one configuration to convert: the only one, or the
// one whose key or <configmap>/<key> is key. Several without a choice are
// an error listing them, never a silent pick.
func choose(cs []config, key string) (config, error) {
	if key != "" {
		var match []config
		for _, c := range cs {
			if c.key == key || c.path == key {
				match = append(match, c)
			}
		}
		switch len(match) {
		case 1:
			return match[0], nil
		case 0:
			return config{}, fmt.Errorf("%w: no configuration under key %q; the input holds %s", ErrInvalid, key, names(cs))
		}
		return config{}, fmt.Errorf("%w: %d configurations under key %q (%s): give CONFIGMAP/KEY", ErrInvalid, len(match), key, names(match))
	}
	switch len(cs) {
	case 0:
		return config{}, fmt.Errorf("%w: empty document", ErrInvalid)
	case 1:
		return cs[0], nil
	}
	return config{}, fmt.Errorf("%w: the input holds %d configurations (%s): choose one with --key (a key, or CONFIGMAP/KEY), or convert each on its own", ErrInvalid, len(cs), names(cs))
}

func names(cs []config) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return strings.Join(out, ", ")
}
