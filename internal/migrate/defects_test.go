package migrate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A ConfigMap with a YAML syntax error is reported as YAML, with its line,
// not as "not the plugin's JSON at line 1".
func TestYAMLErrorIsReportedAsYAML(t *testing.T) {
	t.Parallel()
	in := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  config.json: |\n    {\"resourceList\": []}\n  bad: [\n"
	_, _, err := ConvertSRIOVDP([]byte(in), Options{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not YAML") || !strings.Contains(err.Error(), "line 8") || strings.Contains(err.Error(), "line 1,") {
		t.Errorf("err = %v", err)
	}
	// Broken JSON is still judged as the plugin's JSON.
	if _, _, err := ConvertSRIOVDP([]byte(`{"resourceList": [`), Options{}); err == nil || !strings.Contains(err.Error(), "JSON") {
		t.Errorf("broken JSON: %v", err)
	}
}

// isRdma at the resource's top level is ignored by the plugin: reported
// as dropped once (not "ignored" and then "not set" under the same name),
// and selectors.isRdma's notes say selectors.isRdma.
func TestTopLevelIsRdmaUnlikeSelectors(t *testing.T) {
	t.Parallel()
	entries := func(in string) []string {
		_, rep := convert(t, []byte(in), Options{})
		var out []string
		for _, e := range rep.Entries {
			if strings.Contains(strings.ToLower(e.Field), "isrdma") {
				out = append(out, string(e.Action)+" "+e.Field)
			}
		}
		return out
	}
	top := entries(`{"resourceList":[{"resourceName":"a","isRdma":true,"selectors":{"vendors":["15b3"]}}]}`)
	if d := cmp.Diff([]string{"dropped isRdma", "note selectors.isRdma"}, top); d != "" {
		t.Errorf("top-level isRdma (-want +got):\n%s", d)
	}
	sel := entries(`{"resourceList":[{"resourceName":"a","selectors":{"vendors":["15b3"],"isRdma":true}}]}`)
	if d := cmp.Diff([]string{"changed selectors.isRdma", "note selectors.isRdma"}, sel); d != "" {
		t.Errorf("selectors.isRdma (-want +got):\n%s", d)
	}
}
