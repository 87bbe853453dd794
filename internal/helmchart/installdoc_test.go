package helmchart

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	cniconfig "github.com/railyard-io/railyard/internal/cni/config"
)

const installGuide = "../../docs/install.md"

// fencedBlocks returns the bodies of the guide's code blocks fenced as
// lang (```yaml, ```json).
func fencedBlocks(t *testing.T, doc, lang string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestInstallGuideExamplesAreValid holds docs/install.md to the code: every
// values example renders with the chart (values.schema.json checking it)
// into an agent configuration the agent's own parser accepts, every
// Kubernetes object it shows decodes strictly into its API type, and every
// railyard-cni configuration (a NetworkAttachmentDefinition's, a
// containerd network list's) passes railyard-cni's parser.
func TestInstallGuideExamplesAreValid(t *testing.T) {
	data, err := os.ReadFile(installGuide)
	if err != nil {
		t.Fatal(err)
	}
	guide := string(data)
	counts := map[string]int{}
	cni := func(where string, conf []byte) {
		t.Helper()
		if _, err := cniconfig.Parse(conf); err != nil {
			t.Errorf("%s: railyard-cni refuses the configuration: %v\n%s", where, err, conf)
		}
		counts["railyard-cni configuration"]++
	}
	for i, block := range fencedBlocks(t, guide, "yaml") {
		for j, doc := range strings.Split(block, "\n---\n") {
			var head map[string]any
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Errorf("yaml block %d, document %d: %v\n%s", i, j, err, doc)
				continue
			}
			switch head["kind"] {
			case nil:
				_, objs := render(t, head)
				if _, err := v1alpha1.Parse([]byte(objs.configMap(t).Data["config.yaml"])); err != nil {
					t.Errorf("yaml block %d: the agent refuses the configuration these values render: %v\n%s", i, err, doc)
				}
				counts["values"]++
			case "Pod":
				var pod corev1.Pod
				if err := yaml.UnmarshalStrict([]byte(doc), &pod); err != nil {
					t.Errorf("yaml block %d: Pod: %v", i, err)
				}
				counts["Pod"]++
			case "ResourceClaimTemplate":
				var rct resourcev1.ResourceClaimTemplate
				if err := yaml.UnmarshalStrict([]byte(doc), &rct); err != nil {
					t.Errorf("yaml block %d: ResourceClaimTemplate: %v", i, err)
				}
				counts["ResourceClaimTemplate"]++
			case "NetworkAttachmentDefinition":
				var nad struct {
					Spec struct{ Config string } `json:"spec"`
				}
				if err := yaml.Unmarshal([]byte(doc), &nad); err != nil {
					t.Errorf("yaml block %d: NetworkAttachmentDefinition: %v", i, err)
					continue
				}
				cni("yaml block "+itoa(i)+" (NetworkAttachmentDefinition)", []byte(nad.Spec.Config))
			default:
				t.Errorf("yaml block %d: a %v, which this test does not check: teach it", i, head["kind"])
			}
		}
	}
	for i, block := range fencedBlocks(t, guide, "json") {
		var list struct {
			CNIVersion string            `json:"cniVersion"`
			Name       string            `json:"name"`
			Plugins    []json.RawMessage `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(block), &list); err != nil {
			t.Errorf("json block %d: %v", i, err)
			continue
		}
		for _, p := range list.Plugins {
			var conf map[string]any
			if err := json.Unmarshal(p, &conf); err != nil {
				t.Fatal(err)
			}
			if conf["type"] != "railyard-cni" {
				continue
			}
			// containerd hands each plugin of a list the list's version and name.
			conf["cniVersion"], conf["name"] = list.CNIVersion, list.Name
			b, err := json.Marshal(conf)
			if err != nil {
				t.Fatal(err)
			}
			cni("json block "+itoa(i), b)
		}
	}
	// The guide's examples, so that a reworded fence cannot empty the test.
	for what, least := range map[string]int{"values": 4, "Pod": 2, "ResourceClaimTemplate": 1, "railyard-cni configuration": 2} {
		if counts[what] < least {
			t.Errorf("%d %s examples checked in %s, want at least %d", counts[what], what, installGuide, least)
		}
	}
}
