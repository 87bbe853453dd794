package v1alpha1

import (
	"strings"
	"testing"
)

func TestSharedAndMergedDefaults(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: railyard.io/v1alpha1
kind: AgentConfig
pools:
- name: railyard.io/rdma_shared
  deviceKind: shared
  selectors: {}
- name: railyard.io/rdma_pf
  deviceKind: pf
  selectors: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.NCCLIBHCA != NCCLIBHCAEnv || c.StateDir != "/var/lib/railyard" || c.CDISpecDir != "" {
		t.Errorf("ncclIBHCA=%q stateDir=%q cdiSpecDir=%q, want env, /var/lib/railyard, empty", c.NCCLIBHCA, c.StateDir, c.CDISpecDir)
	}
	if c.Pools[0].SharedLimit == nil || *c.Pools[0].SharedLimit != 1000 {
		t.Errorf("shared pool limit = %v, want 1000", c.Pools[0].SharedLimit)
	}
	if c.Pools[1].SharedLimit != nil {
		t.Errorf("pf pool got a shared limit %d", *c.Pools[1].SharedLimit)
	}
}

func TestSharedMultiRailFixtureKeepsValues(t *testing.T) {
	c, err := Load("testdata/valid-shared-multirail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.NCCLIBHCA != NCCLIBHCAMerged || c.CDISpecDir != "/var/run/cdi" {
		t.Errorf("ncclIBHCA=%q cdiSpecDir=%q", c.NCCLIBHCA, c.CDISpecDir)
	}
	p := c.Pools[2]
	if p.DeviceKind != KindShared || p.SharedLimit == nil || *p.SharedLimit != 16 || !p.DeviceNodes.UMAD {
		t.Errorf("shared pool = %+v", p)
	}
}

// TestSharedAndMergedErrorsHaveFieldPaths: every problem of the invalid
// shared fixture, each with its path.
func TestSharedAndMergedErrorsHaveFieldPaths(t *testing.T) {
	_, err := Load("testdata/invalid-shared.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`ncclIBHCA: Unsupported value: "both": supported values: "env", "merged"`,
		`cdiSpecDir: Invalid value: "var/run/cdi": must be an absolute path`,
		`cdiSpecDir: Invalid value: "var/run/cdi": is used only with ncclIBHCA: merged`,
		`pools[0].sharedLimit: Invalid value: 0: must be 1-1000 (pods per NIC)`,
		`pools[0].selectors.pfNames[0]: Invalid value: "ens113f0#0-3": a shared pool hands out whole NICs`,
		`pools[0].selectors.rdmaCapable: Invalid value: false: a shared pool hands out verbs devices`,
		`pools[1].sharedLimit: Invalid value: 4: only a pool of deviceKind shared has a sharedLimit`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "\n  - "); n != 7 {
		t.Errorf("%d errors, want 7:\n%s", n, msg)
	}
}

func TestSharedLimitBounds(t *testing.T) {
	for limit, ok := range map[int]bool{1: true, 1000: true, 1001: false, -1: false} {
		n := limit
		c := New()
		c.Pools = []Pool{{Name: "railyard.io/s", DeviceKind: KindShared, SharedLimit: &n}}
		Default(c)
		errs := Validate(c)
		if (len(errs) == 0) != ok {
			t.Errorf("sharedLimit %d: errors %v, want ok=%v", limit, errs, ok)
		}
	}
}

// TestNCCLCrossNICIsZeroOneOrTwo: 0 is a value (isolated rails), not
// "unset"; anything else than 0, 1 or 2 is refused with the field named.
func TestNCCLCrossNICIsZeroOneOrTwo(t *testing.T) {
	base := "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\npools: [{name: railyard.io/rdma, selectors: {rdmaCapable: true}}]\n"
	c, err := Parse([]byte(base + "ncclCrossNIC: 0\n"))
	if err != nil || c.NCCLCrossNIC == nil || *c.NCCLCrossNIC != 0 {
		t.Fatalf("ncclCrossNIC 0: %+v, %v", c, err)
	}
	if c, err := Parse([]byte(base)); err != nil || c.NCCLCrossNIC != nil {
		t.Fatalf("unset: %v, %v", c.NCCLCrossNIC, err)
	}
	for _, bad := range []string{"3", "-1"} {
		if _, err := Parse([]byte(base + "ncclCrossNIC: " + bad + "\n")); err == nil || !strings.Contains(err.Error(), "ncclCrossNIC") {
			t.Errorf("ncclCrossNIC %s: %v", bad, err)
		}
	}
}

// TestNCCLProfileSocketIfnameAndAddrFamily: a known fabric profile, an
// NCCL interface list ("" included: no NCCL_SOCKET_IFNAME) and an address
// family are taken; an unknown profile or family, and an interface list
// with white space, are refused with the field named.
func TestNCCLProfileSocketIfnameAndAddrFamily(t *testing.T) {
	base := "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\npools: [{name: railyard.io/rdma, selectors: {rdmaCapable: true}}]\n"
	c, err := Parse([]byte(base + "ncclProfile: ecmp\nncclSocketIfname: \"\"\nncclIBAddrFamily: AF_INET6\n"))
	if err != nil || c.NCCLProfile != "ecmp" || c.NCCLSocketIfname == nil || *c.NCCLSocketIfname != "" || c.NCCLIBAddrFamily != "AF_INET6" {
		t.Fatalf("valid NCCL settings: %+v, %v", c, err)
	}
	if c, err := Parse([]byte(base)); err != nil || c.NCCLSocketIfname != nil || c.NCCLProfile != "" {
		t.Fatalf("unset: %+v, %v", c, err)
	}
	for field, bad := range map[string]string{
		"ncclProfile":      "ncclProfile: spine\n",
		"ncclIBAddrFamily": "ncclIBAddrFamily: inet\n",
		"ncclSocketIfname": "ncclSocketIfname: \"eth0, eth1\"\n",
	} {
		if _, err := Parse([]byte(base + bad)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming the field", bad, err)
		}
	}
}
