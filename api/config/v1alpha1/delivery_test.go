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
// is no mode), and a dra pool cannot be bound late or given CDI names,
// and needs cdiSpecDir. A shared dra pool is valid (consumable capacity).
func TestDeliveryErrorsHaveFieldPaths(t *testing.T) {
	_, err := Load("testdata/invalid-delivery.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`pools[0].delivery: Unsupported value: "both": supported values: "devicePlugin", "dra"`,
		`pools[1].binding: Invalid value: "sandbox": the scheduler binds a DRA pool's devices`,
		`pools[1].cdiKind: Invalid value: "railyard.io/rdma": a DRA pool's devices always reach the container`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	// A plain vf pool with delivery dra needs only cdiSpecDir.
	c := &AgentConfig{Pools: []Pool{{Name: "railyard.io/rdma_dra", Delivery: DeliveryDRA}}}
	Default(c)
	errs := Validate(c)
	if len(errs) != 1 || errs[0].Field != "pools[0].delivery" || !strings.Contains(errs[0].Detail, "set cdiSpecDir") {
		t.Errorf("a plain dra pool without cdiSpecDir: %v, want only the cdiSpecDir error", errs)
	}
	c.CDISpecDir = "/var/run/cdi"
	if errs := Validate(c); len(errs) != 0 {
		t.Errorf("a plain dra pool with cdiSpecDir: %v", errs)
	}
	c.Pools[0].DeviceKind, c.Pools[0].SharedLimit = KindShared, nil
	Default(c)
	if errs := Validate(c); len(errs) != 0 || *c.Pools[0].SharedLimit != DefaultSharedLimit {
		t.Errorf("a shared dra pool: %v, sharedLimit %d", errs, *c.Pools[0].SharedLimit)
	}
	if strings.Contains(msg, "deviceKind") {
		t.Errorf("a shared dra pool's kind is refused:\n%s", msg)
	}
}
