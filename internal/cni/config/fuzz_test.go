package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"runtimeConfig":null,"ipam":null,"args":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Fields) == 0 {
				t.Fatalf("error %v is not a non-empty *Error", err)
			}
			if ce.Code() == 0 {
				t.Fatal("error without CNI code")
			}
			return
		}
		set := 0
		for _, v := range []string{c.DeviceID, c.Device, c.Token} {
			if v != "" {
				set++
			}
		}
		if set > 1 || (set == 0 && c.ResourceName == "") {
			t.Fatalf("exactly one of DeviceID/Device/Token (or only resourceName) must be set: %q %q %q %q", c.DeviceID, c.Device, c.Token, c.ResourceName)
		}
		if !filepath.IsAbs(c.BindingDir) {
			t.Fatalf("relative binding dir accepted: %q", c.BindingDir)
		}
		if c.MTU != 0 && (c.MTU < 68 || c.MTU > 65535) {
			t.Fatalf("MTU %d out of range accepted", c.MTU)
		}
		if c.MAC != nil && (len(c.MAC) != 6 || c.MAC[0]&1 == 1) {
			t.Fatalf("bad MAC %s accepted", c.MAC)
		}
		if c.VF.VLAN != nil && (*c.VF.VLAN < 0 || *c.VF.VLAN > 4094) {
			t.Fatalf("bad vlan %d accepted", *c.VF.VLAN)
		}
		if !filepath.IsAbs(c.StateDir) || !filepath.IsAbs(c.SysfsRoot) {
			t.Fatalf("relative dirs accepted: %q %q", c.StateDir, c.SysfsRoot)
		}
		if c.Name == "" || c.CNIVersion == "" {
			t.Fatal("missing name or cniVersion accepted")
		}
	})
}

// FuzzParseDel: DEL's lenient reading never fails, never panics, and
// whatever it keeps is as valid as what Parse accepts; when Parse accepts
// a document, ParseDel reads the same device, IPAM and state directory.
func FuzzParseDel(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"deviceID":7,"pciBusID":"3b:00.0","stateDir":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _ := ParseDel(data)
		if c == nil {
			t.Fatal("nil Config")
		}
		if !filepath.IsAbs(c.StateDir) || !filepath.IsAbs(c.SysfsRoot) {
			t.Fatalf("relative dirs kept: %q %q", c.StateDir, c.SysfsRoot)
		}
		if c.DeviceID != "" {
			if _, ok := NormalizePCIAddress(c.DeviceID); !ok {
				t.Fatalf("bad device %q kept", c.DeviceID)
			}
		}
		if strict, err := Parse(data); err == nil {
			if strict.DeviceID != c.DeviceID || strict.Device != c.Device || strict.IPAMType != c.IPAMType || strict.StateDir != c.StateDir ||
				strict.Token != c.Token || strict.BindingDir != c.BindingDir {
				t.Fatalf("ParseDel read %q/%q/%q/%q, Parse %q/%q/%q/%q", c.DeviceID, c.Device, c.IPAMType, c.StateDir,
					strict.DeviceID, strict.Device, strict.IPAMType, strict.StateDir)
			}
		}
	})
}
