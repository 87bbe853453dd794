package migrate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const perNodeConfigMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: device-plugin-config, namespace: sriov-network-operator}
data:
  node-a: |
    {"resourceList": [{"resourceName": "a", "selectors": {"vendors": ["15b3"], "isRdma": true}}]}
  node-b: |
    {"resourceList": [{"resourceName": "b", "selectors": {"vendors": ["15b3"], "isRdma": true}}]}
`

func configMapDoc(name, resource string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata:\n  config.json: |\n"+
		"    {\"resourceList\": [{\"resourceName\": %q, \"selectors\": {\"vendors\": [\"15b3\"], \"isRdma\": true}}]}\n", name, resource)
}

// The SR-IOV network operator's ConfigMap (one key per node, no
// config.json), a v1 List and several YAML documents: one configuration
// is converted when the input holds one, or the one --key names; several
// without a choice are an error listing them (a List failed with "invalid
// character 'a'", a second document was dropped silently).
func TestInputShapes(t *testing.T) {
	t.Parallel()
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(configMapDoc("dp", "x"), "\n"), "\n", "\n  ") + "\n"
	twoDocs := configMapDoc("cm1", "one") + "---\n" + configMapDoc("cm2", "two")
	for _, tc := range []struct {
		name, in, key string
		pools         []string
		err           string
	}{
		{name: "per-node keys", in: perNodeConfigMap,
			err: "the input holds 2 configurations (key node-a of ConfigMap device-plugin-config, key node-b of ConfigMap device-plugin-config): choose one with --key"},
		{name: "per-node key chosen", in: perNodeConfigMap, key: "node-b", pools: []string{"intel.com/b"}},
		{name: "per-node CONFIGMAP/KEY", in: perNodeConfigMap, key: "device-plugin-config/node-a", pools: []string{"intel.com/a"}},
		{name: "unknown key", in: perNodeConfigMap, key: "node-c", err: `no configuration under key "node-c"`},
		{name: "v1 List", in: list, pools: []string{"intel.com/x"}},
		{name: "List of a Pod", in: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod}\n", err: `items[0] is a "Pod", not a ConfigMap`},
		{name: "two documents", in: twoDocs, err: "the input holds 2 configurations (config.json of ConfigMap cm1, config.json of ConfigMap cm2)"},
		{name: "two documents, one chosen", in: twoDocs, key: "cm2/config.json", pools: []string{"intel.com/two"}},
		{name: "same key twice", in: twoDocs, key: "config.json", err: `2 configurations under key "config.json"`},
		{name: "config.json and another document", in: `{"resourceList": [{"resourceName": "a", "selectors": {}}]}` + "\n---\n" + configMapDoc("cm", "b"),
			err: "the input holds 2 configurations (document 1, config.json of ConfigMap cm)"},
		{name: "another kind", in: "apiVersion: v1\nkind: Secret\n", err: "document 1 is a Secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, _, err := ConvertSRIOVDP([]byte(tc.in), Options{Key: tc.key})
			if tc.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrInvalid: %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.pools, poolNames(cfg)); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
		})
	}
}

// A selector field of the wrong type is named, not hidden behind "not a
// list of selector objects".
func TestWrongSelectorTypeIsNamed(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"resourceList": [{"resourceName": "a", "selectors": {"vendors": "15b3"}}]}`: "selectors: vendors: got a JSON string, want a list of strings",
		`{"resourceList": [{"resourceName": "a", "selectors": {"isRdma": "yes"}}]}`:   "selectors: isRdma: got a JSON string, want true or false",
		`{"resourceList": [{"resourceName": "a", "selectors": [{"pfNames": [1]}]}]}`:  "a list of them: pfNames: got a JSON number, want a string",
		`{"resourceList": [{"resourceName": "a", "selectors": "x"}]}`:                 "neither a selector object nor a list of them",
	} {
		_, _, err := ConvertSRIOVDP([]byte(in), Options{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", in, err, want)
		}
	}
}

// The input and its resource list are bounded (a 12 MB configuration of
// 150k resources took 36 s and 3.95 GB); a configuration at the bound
// converts.
func TestInputBounds(t *testing.T) {
	t.Parallel()
	resources := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"resourceList": [`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"resourceName": "r%d", "selectors": {"vendors": ["15b3"], "isRdma": true}}`, i)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	if _, _, err := ConvertSRIOVDP(resources(MaxResources+1), Options{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "1025 resources, more than 1024") {
		t.Errorf("%d resources: err = %v", MaxResources+1, err)
	}
	big := append(resources(1), make([]byte, MaxInput)...)
	if _, _, err := ConvertSRIOVDP(big, Options{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "more than 1048576") {
		t.Errorf("%d bytes: err = %v", len(big), err)
	}
	cfg, _, err := ConvertSRIOVDP(resources(MaxResources), Options{})
	if err != nil || len(cfg.Pools) != MaxResources {
		t.Fatalf("%d resources: err %v", MaxResources, err)
	}
}
