package v1alpha1

import (
	"strings"
	"testing"
	"time"
)

// Later documents used to be ignored silently.
func TestMultiDocumentRejected(t *testing.T) {
	_, err := Load("testdata/invalid-multi-document.yaml")
	if err == nil || !strings.Contains(err.Error(), "2 YAML documents: the configuration is one document") {
		t.Fatalf("err = %v", err)
	}
	c, err := Load("testdata/valid-leading-separator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.ResyncInterval.Duration != 24*time.Hour || c.PortPollInterval.Duration != 0 {
		t.Errorf("intervals %v, %v", c.ResyncInterval, c.PortPollInterval)
	}
}

// resyncInterval 1ns spun a core; 1000000h made /healthz fail at once.
func TestIntervalBounds(t *testing.T) {
	_, err := Load("testdata/invalid-intervals.yaml")
	for _, want := range []string{
		`resyncInterval: Invalid value: "1ns": must be 1s to 24h0m0s`,
		`portPollInterval: Invalid value: "1000000h0m0s": must be 100ms to 1h0m0s, or 0s to disable the poll`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	for _, tc := range []struct {
		resync, poll string
		ok           bool
	}{
		{"1s", "100ms", true}, {"24h", "1h", true}, {"10s", "0s", true},
		{"999ms", "2s", false}, {"24h1s", "2s", false}, {"10s", "99ms", false}, {"10s", "-1s", false}, {"0s", "2s", false},
	} {
		doc := "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\nresyncInterval: " + tc.resync +
			"\nportPollInterval: " + tc.poll + "\npools: [{name: railyard.io/rdma, selectors: {}}]\n"
		if _, err := Parse([]byte(doc)); (err == nil) != tc.ok {
			t.Errorf("resync %s, poll %s: err = %v, want ok=%v", tc.resync, tc.poll, err, tc.ok)
		}
	}
}

// Names kubelet refuses at registration are refused here, with kubelet's
// reasons.
func TestResourceNamesAsKubeletChecksThem(t *testing.T) {
	_, err := Load("testdata/invalid-resource-names.yaml")
	for _, want := range []string{
		`pools[0].name: Invalid value: "requests.railyard.io/rdma": must not start with "requests."`,
		`pools[1].name: Invalid value: "foo.kubernetes.io/rdma": the kubernetes.io domain is reserved`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	// A domain that leaves no room for kubelet's "requests." prefix.
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 55) + "/rdma"
	if errs := validateResourceName(nil, long); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), `kubelet checks "requests."+name`) {
		t.Errorf("domain of %d characters: %v", len(long)-5, errs)
	}
	for _, ok := range []string{"railyard.io/rdma", "nvidia.com/gpu", "example.com/rdma_vf-a.1"} {
		if errs := validateResourceName(nil, ok); len(errs) > 0 {
			t.Errorf("%s: %v", ok, errs)
		}
	}
}

// An unknown field is named by its full path, also deep in a list.
func TestUnknownFieldPath(t *testing.T) {
	doc := `apiVersion: railyard.io/v1alpha1
kind: AgentConfig
pools:
- name: railyard.io/a
  selectors: {}
- name: railyard.io/b
  selectors:
    vendorz: ["15b3"]
  deviceNodes: {umad: true, isms: true}
`
	_, err := Parse([]byte(doc))
	for _, want := range []string{`unknown field "pools[1].selectors.vendorz"`, `unknown field "pools[1].deviceNodes.isms"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

// A bad duration used to fail with metav1.Duration's bare
// `time: invalid duration ""`, naming no field.
func TestBadDurationsNameTheirField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{`resyncInterval: ""`, `resyncInterval: time: invalid duration ""`},
		{`portPollInterval: ""`, `portPollInterval: time: invalid duration ""`},
		{`resyncInterval: 5x`, `resyncInterval: time: unknown unit "x" in duration "5x"`},
		{`resyncInterval: 5`, `resyncInterval: 5 is not a duration string such as "10s"`},
		{`portPollInterval: {a: 1}`, `portPollInterval: {"a":1} is not a duration string such as "10s"`},
	} {
		doc := "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\n" + tc.line + "\npools: [{name: railyard.io/rdma, selectors: {}}]\n"
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.line, err, tc.want)
		}
	}
}

// errorCounters: defaults when absent, bounds and a named error for each
// field.
func TestErrorCountersDefaultsAndBounds(t *testing.T) {
	base := "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\npools: [{name: railyard.io/rdma, selectors: {}}]\n"
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if ec := c.ErrorCounters; ec == nil || ec.Window.Duration != DefaultErrorCounterWindow || *ec.LinkErrors != DefaultLinkErrors || ec.Hold.Duration != DefaultDegradedHold {
		t.Errorf("defaults: %+v", c.ErrorCounters)
	}
	parseCases(t, base, []parseCase{
		{"errorCounters: {window: 0s}", ""},
		{"errorCounters: {window: 1h, linkErrors: 1, hold: 0s}", ""},
		{"errorCounters: {window: 500ms}", `errorCounters.window: Invalid value: "500ms": must be 1s to 1h0m0s, or 0s`},
		{"errorCounters: {window: 2h}", `errorCounters.window: Invalid value: "2h0m0s"`},
		{"errorCounters: {linkErrors: 0}", `errorCounters.linkErrors: Invalid value: 0: must be at least 1`},
		{"errorCounters: {hold: -1s}", `errorCounters.hold: Invalid value: "-1s": must be 0s to 24h0m0s`},
		{"errorCounters: {hold: 25h}", `errorCounters.hold: Invalid value: "25h0m0s"`},
		{"errorCounters: {windw: 1s}", `windw`},
	})
}

// firmware: absent or empty refuses nothing; each bad entry is named.
func TestFirmwarePolicyIsValidated(t *testing.T) {
	base := "apiVersion: railyard.io/v1alpha1\nkind: AgentConfig\npools: [{name: railyard.io/rdma, selectors: {}}]\n"
	parseCases(t, base, []parseCase{
		{"firmware: {}", ""},
		{`firmware: {minimum: {"15b3:1021": "28.39.1002"}, refuseKnownIssues: ["3363753"]}`, ""},
		{`firmware: {minimum: {"15b3:1021": "28.39"}}`, `firmware: Invalid value: minimum[15b3:1021]: "28.39" is not a release like 28.39.1002`},
		{`firmware: {minimum: {"ConnectX-7": "28.39.1002"}}`, `firmware: Invalid value: minimum: model "ConnectX-7": want vendor:device`},
		{`firmware: {refuseKnownIssues: ["12345"]}`, `firmware: Invalid value: refuseKnownIssues[0]: "12345" is not a known issue`},
		{`firmware: {minimum: ["15b3:1021"]}`, `firmware.minimum`},
		{`firmware: {refuse: ["3363753"]}`, `refuse`},
	})
}

// parseCase is a configuration's extra lines and a part of the error
// Parse must give ("" for none).
type parseCase struct{ body, err string }

// parseCases parses base plus each case's body.
func parseCases(t *testing.T, base string, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := Parse([]byte(base + tc.body + "\n"))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err = %v, want %q", tc.body, err, tc.err)
		}
	}
}
