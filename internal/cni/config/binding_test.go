package config

import (
	"os"
	"testing"
)

// TestLateBindingFields: a token as deviceID (and pciBusID, as Multus
// sets both) is a token, not a device; resourceName alone is enough; the
// binding store defaults to /var/lib/railyard/binding; DEL reads the same.
func TestLateBindingFields(t *testing.T) {
	data, err := os.ReadFile("testdata/valid-multus-token.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Token == "" || c.DeviceID != "" || c.Share != "" || c.BindingDir != DefaultBindingDir {
		t.Errorf("token %q deviceID %q share %q bindingDir %q", c.Token, c.DeviceID, c.Share, c.BindingDir)
	}
	d, problems := ParseDel(data)
	if d.Token != c.Token || len(problems) != 0 {
		t.Errorf("DEL read token %q (%v)", d.Token, problems)
	}
	data, _ = os.ReadFile("testdata/valid-resource-name.json")
	c, err = Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.ResourceName != "railyard.io/rdma_vf" || c.Token != "" || c.DeviceID != "" {
		t.Errorf("resourceName %q token %q deviceID %q", c.ResourceName, c.Token, c.DeviceID)
	}
	if _, err := Parse([]byte(`{"cniVersion":"1.1.0","name":"n","type":"railyard-cni","resourceName":"railyard.io/rdma_vf","device":"eth1"}`)); err == nil {
		t.Error("resourceName with device accepted")
	}
}
