package config

import (
	"strings"
	"testing"
)

// TestNormalizePCIAddress pins the deviceID forms the plugin accepts: the
// rules are internal/pciaddr's, plus white space and the short form.
func TestNormalizePCIAddress(t *testing.T) {
	for in, want := range map[string]string{
		"0000:3b:00.0":     "0000:3b:00.0",
		"0000:3B:00.0":     "0000:3b:00.0",
		"3b:00.1":          "0000:3b:00.1",
		" 3b:00.1\n":       "0000:3b:00.1",
		"00000000:3B:00.0": "0000:3b:00.0",  // nvidia-smi's form
		"10000:e1:00.1":    "10000:e1:00.1", // behind Intel VMD
	} {
		if got, ok := NormalizePCIAddress(in); !ok || got != want {
			t.Errorf("NormalizePCIAddress(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "0000:3b:20.0", "0000:3b:00.8", "3b:00", "000:3b:00.0", "0000:3b:00.0-s1", "tok-a-n0-1"} {
		if got, ok := NormalizePCIAddress(in); ok {
			t.Errorf("NormalizePCIAddress(%q) = %q, want not ok", in, got)
		}
	}
	_, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"0000:3b:20.0"}`))
	if err == nil || !strings.Contains(err.Error(), "deviceID") {
		t.Errorf("device 0x20: %v, want a deviceID error", err)
	}
	c, err := Parse([]byte(`{"cniVersion":"1.0.0","name":"n","type":"t","deviceID":"0000:3B:00.0-s2"}`))
	if err != nil || c.DeviceID != "0000:3b:00.0" || c.Share != "0000:3b:00.0-s2" {
		t.Errorf("a share in upper case: %+v, %v", c, err)
	}
}
