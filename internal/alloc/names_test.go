package alloc_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/alloc"
)

// TestRegistry: every name builds a policy of that name, and an unknown
// name none.
func TestRegistry(t *testing.T) {
	t.Parallel()
	for _, n := range alloc.Names() {
		p, err := alloc.ByName(n)
		if err != nil || p.Name() != n {
			t.Errorf("ByName(%q) = %v, %v", n, p, err)
		}
		if _, ok := alloc.RoleOf(n); !ok {
			t.Errorf("RoleOf(%q): unknown", n)
		}
	}
	if _, err := alloc.ByName("fastest"); err == nil {
		t.Error("ByName accepted an unknown policy")
	}
	if diff := cmp.Diff(alloc.Names(), append(append(alloc.Names(alloc.Baseline), alloc.Names(alloc.Node)...), alloc.Names(alloc.Reference)...)); diff != "" {
		t.Errorf("every policy has one of the roles, in order (-want +got):\n%s", diff)
	}
}

// TestNodePoliciesAreWhatTheConfigurationAndChartAccept ties the lists
// that must stay literal to the registry: the agent's configuration
// accepts exactly the Node policies of alloc's names (its validation keeps
// its own list: api/config/v1alpha1 imports no policy code), and the
// chart's values.schema.json enumerates exactly them.
func TestNodePoliciesAreWhatTheConfigurationAndChartAccept(t *testing.T) {
	t.Parallel()
	node := alloc.Names(alloc.Node)
	var accepted []string
	for _, n := range append(alloc.Names(), "fastest") {
		c := v1alpha1.New()
		c.Pools = []v1alpha1.Pool{{Name: "railyard.io/rdma_vf", Policy: n}}
		v1alpha1.Default(c)
		ok := true
		for _, e := range v1alpha1.Validate(c) {
			if e.Field == "pools[0].policy" {
				ok = false
			}
		}
		if ok {
			accepted = append(accepted, n)
		}
	}
	if diff := cmp.Diff(node, accepted); diff != "" {
		t.Errorf("policies the agent's configuration accepts (-want +got):\n%s", diff)
	}

	b, err := os.ReadFile("../../deploy/helm/railyard/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Config struct {
				Properties struct {
					Pools struct {
						Items struct {
							Properties struct {
								Policy struct {
									Enum []string `json:"enum"`
								} `json:"policy"`
							} `json:"properties"`
						} `json:"items"`
					} `json:"pools"`
				} `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	enum := slices.Clone(schema.Properties.Config.Properties.Pools.Items.Properties.Policy.Enum)
	if diff := cmp.Diff(node, enum); diff != "" {
		t.Errorf("values.schema.json config.pools[].policy enum (-want +got):\n%s", diff)
	}
}
