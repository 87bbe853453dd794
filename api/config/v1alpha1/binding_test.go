package v1alpha1

import (
	"strings"
	"testing"
)

// TestBindingDefaultAndSandbox: binding defaults to allocate; a sandbox
// pool with cdiSpecDir is valid, and cdiSpecDir is then allowed in env mode.
func TestBindingDefaultAndSandbox(t *testing.T) {
	c, err := Load("testdata/valid-sandbox-binding.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Pools[0].Binding != BindingSandbox || c.Pools[1].Binding != BindingAllocate {
		t.Errorf("bindings %q %q, want sandbox, allocate", c.Pools[0].Binding, c.Pools[1].Binding)
	}
}

// TestBindingErrorsHaveFieldPaths: every problem of the invalid sandbox
// fixture, each with its path.
func TestBindingErrorsHaveFieldPaths(t *testing.T) {
	_, err := Load("testdata/invalid-sandbox-binding.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`pools[0].binding: Unsupported value: "late": supported values: "allocate", "sandbox"`,
		`pools[1].binding: Invalid value: "sandbox": a shared pool's shares each name their NIC`,
		`pools[1].binding: Invalid value: "sandbox": the bound device reaches the container through CDI: set cdiSpecDir`,
		`pools[1].cdiKind: Invalid value: "railyard.io/rdma": a sandbox pool's containers get the CDI devices railyard.io/binding=<token>`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "\n  - "); n != 4 {
		t.Errorf("%d errors, want 4:\n%s", n, msg)
	}
}
