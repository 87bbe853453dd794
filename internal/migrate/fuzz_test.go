package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzConvertSRIOVDP: any input either converts to a configuration the
// agent's loader accepts, or is refused as invalid (no report), or has no
// convertible resource (with a report). Never a panic, never an internal
// error.
func FuzzConvertSRIOVDP(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"resourceList": [{"resourceName": "a", "selectors": [{"rootDevices": ["0000:86:00.0#0-3"], "linkTypes": ["ether"]}, {"pfNames": ["x#1"]}]}]}`))
	f.Add([]byte(`{"resourceList": [{"resourceName": "a", "resourcePrefix": "Bad_Prefix", "selectors": {}}]}`))
	// Input shapes: per-node keys, a List, two documents, a wrong type.
	f.Add([]byte(perNodeConfigMap))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {config.json: '{}'}}\n"))
	f.Add([]byte(configMapDoc("cm1", "one") + "---\n" + configMapDoc("cm2", "two")))
	f.Add([]byte(`{"resourceList": [{"resourceName": "a", "selectors": {"vendors": "15b3"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, r, err := ConvertSRIOVDP(data, Options{})
		switch {
		case err == nil:
			if cfg == nil || r == nil || len(cfg.Pools) == 0 || r.Pools != len(cfg.Pools) {
				t.Fatalf("success without a usable result: cfg %v report %v", cfg, r)
			}
			if _, err := Marshal(cfg); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, ErrInvalid):
			if cfg != nil || r != nil {
				t.Fatalf("invalid input with a result: %v", err)
			}
		case errors.Is(err, ErrNoPools):
			if cfg != nil || r == nil || r.Pools != 0 {
				t.Fatalf("no pools: cfg %v report %v", cfg, r)
			}
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	})
}
