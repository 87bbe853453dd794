package firmware

import (
	"strings"
	"testing"
)

var cx7 = Model{0x15b3, 0x1021}

func TestPolicyRefusesOlderThanTheMinimumAndRefusedIssues(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy(map[string]string{"15b3:1021": "28.39.1002"}, []string{"4394475"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model   Model
		version string
		want    string // a part of the reason; "" accepted
	}{
		{cx7, "28.39.1002", ""},
		{cx7, "28.43.1014", ""},
		{cx7, "28.38.1900\n", "firmware 28.38.1900 below the minimum 28.39.1002 for 15b3:1021"},
		{cx7, "28.46.1000", "firmware 28.46.1000 has known issue 4394475: congestion control"},
		{cx7, "", ""},        // not read: never refused
		{cx7, "garbage", ""}, // not ConnectX-style
		{Model{0x15b3, 0x101d}, "22.39.1002", ""},                        // no minimum for ConnectX-6 Dx
		{Model{0x15b3, 0x101d}, "22.45.1020", "has known issue 4394475"}, // refused issue on another model
		{Model{0x15b3, 0x101d}, "22.43.2026", ""},                        // a known issue not refused: doctor warns, the agent accepts
		{Model{0x8086, 0x1021}, "28.30.1000", ""},                        // another vendor's device 1021
	} {
		got := p.Refused(tc.model, tc.version)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Refused(%s, %q) = %q, want %q", tc.model, tc.version, got, tc.want)
		}
	}
	var zero Policy
	if got := zero.Refused(cx7, "1.0.0"); got != "" {
		t.Errorf("the zero policy refused 1.0.0: %s", got)
	}
}

func TestNewPolicyNamesEveryBadEntry(t *testing.T) {
	t.Parallel()
	_, err := NewPolicy(map[string]string{
		"15b3-1021":  "28.39.1002", // not vendor:device
		"15b3:1017":  "16.35",      // not a release
		"15b3:1021":  "28.39.1002", // fine
		"15B3:1021":  "28.40.1000", // the same model again
		"15b3:10210": "1.2.3",      // 5 digits
	}, []string{"3363753", "1234567"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`model "15b3-1021"`, `minimum[15b3:1017]: "16.35"`, "model 15b3:1021 is given twice", `model "15b3:10210"`, `refuseKnownIssues[1]: "1234567"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "3363753") && !strings.Contains(err.Error(), "(3327847, 3363753") {
		t.Errorf("a known issue was refused as unknown: %v", err)
	}
}
