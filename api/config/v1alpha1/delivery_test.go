package v1alpha1

import (
	"strings"
	"testing"
)

// TestDeliveryDefaultsToDevicePlugin: a pool without delivery is a device
// plugin pool, and a valid configuration stays valid.
func TestDeliveryDefaultsToDevicePlugin(t *testing.T) {
	c, err := Load("testdata/valid-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range c.Pools {
		if p.Delivery != DeliveryDevicePlugin {
			t.Errorf("pools[%d].delivery = %q, want %q", i, p.Delivery, DeliveryDevicePlugin)
		}
	}
}

// TestDeliveryErrorsHaveFieldPaths: a pool is served one way only ("both"
// is no mode), dra is refused while the agent cannot serve it, and a dra
// pool cannot be shared, bound late or given CDI names.
func TestDeliveryErrorsHaveFieldPaths(t *testing.T) {
	_, err := Load("testdata/invalid-delivery.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`pools[0].delivery: Unsupported value: "both": supported values: "devicePlugin", "dra"`,
		`pools[1].delivery: Invalid value: "dra": the agent's DRA kubelet plugin is not built yet`,
		`pools[1].deviceKind: Invalid value: "shared": DRA publishes whole VFs or PFs`,
		`pools[1].binding: Invalid value: "sandbox": the scheduler binds a DRA pool's devices`,
		`pools[1].cdiKind: Invalid value: "railyard.io/rdma": a DRA pool's devices always reach the container`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	// The same dra pool is otherwise valid: only the delivery error is left
	// for a plain vf pool.
	c := &AgentConfig{Pools: []Pool{{Name: "railyard.io/rdma_dra", Delivery: DeliveryDRA}}}
	Default(c)
	errs := Validate(c)
	if len(errs) != 1 || errs[0].Field != "pools[0].delivery" {
		t.Errorf("a plain dra pool: %v, want only the not-served error", errs)
	}
}
