package sysfs_test

import (
	"encoding/binary"
	"testing"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/sysfs"
)

func TestParseACSWalksTheExtendedCapabilityList(t *testing.T) {
	for _, ctrl := range []uint16{0, sysfs.ACSSourceValidation, 0x001d, 0x005f} {
		b := fakesysfs.ConfigSpace{ACS: true, ACSControl: ctrl}.Config()
		acs, ok, err := sysfs.ParseACS(b)
		if err != nil || !ok || acs.Offset != 0x148 || acs.Control != ctrl || acs.Capability != 0x005f {
			t.Fatalf("ctrl %#x: %+v ok=%v err=%v", ctrl, acs, ok, err)
		}
		if want := ctrl&(sysfs.ACSP2PRequestRedirect|sysfs.ACSP2PCompletionRedir|sysfs.ACSP2PEgressControl) != 0; acs.Redirects() != want {
			t.Errorf("ctrl %#x: Redirects() = %v", ctrl, acs.Redirects())
		}
	}
	acs, _, _ := sysfs.ParseACS(fakesysfs.ConfigSpace{ACS: true, ACSControl: 0x001d}.Config())
	if got := acs.String(); got != "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" {
		t.Fatalf("String() = %q", got)
	}
}

func TestParseACSAbsentOrUnreadable(t *testing.T) {
	for name, b := range map[string][]byte{
		"no ACS":        fakesysfs.ConfigSpace{}.Config(),
		"unprivileged":  fakesysfs.ConfigSpace{ACS: true, Size: 64}.Config(),
		"conventional":  fakesysfs.ConfigSpace{ACS: true, Size: 256}.Config(),
		"empty ext cap": make([]byte, 4096),
	} {
		if _, ok, err := sysfs.ParseACS(b); ok || err != nil {
			t.Errorf("%s: ok=%v err=%v", name, ok, err)
		}
	}
}

func TestParseACSMalformedLists(t *testing.T) {
	loop := make([]byte, 4096)
	binary.LittleEndian.PutUint32(loop[0x100:], 0x0001|0x100<<20) // points at itself
	outside := make([]byte, 0x200)
	binary.LittleEndian.PutUint32(outside[0x100:], 0x0001|0xffc<<20)
	truncated := fakesysfs.ConfigSpace{ACS: true}.Config()[:0x14c]
	for name, b := range map[string][]byte{"loop": loop, "outside": outside, "truncated": truncated} {
		if _, ok, err := sysfs.ParseACS(b); ok || err == nil {
			t.Errorf("%s: ok=%v err=%v, want an error", name, ok, err)
		}
	}
}

func TestParseGUID(t *testing.T) {
	want := [8]byte{0x0c, 0x42, 0xa1, 0x03, 0x00, 0xa1, 0xb2, 0xc4}
	for _, s := range []string{"0c42:a103:00a1:b2c4", "0c:42:a1:03:00:a1:b2:c4", " 0C42:A103:00A1:B2C4\n"} {
		if g, err := sysfs.ParseGUID(s); err != nil || g != want {
			t.Errorf("ParseGUID(%q) = %x, %v", s, g, err)
		}
	}
	for _, s := range []string{"", "0c42:a103:00a1", "0c42:a103:00a1:b2cz", "0c42:a103:00a1:b2c4:00"} {
		if _, err := sysfs.ParseGUID(s); err == nil {
			t.Errorf("ParseGUID(%q) accepted", s)
		}
	}
}

func FuzzParseACS(f *testing.F) {
	f.Add(fakesysfs.ConfigSpace{ACS: true, ACSControl: 0x1d}.Config())
	f.Add(make([]byte, 300))
	f.Fuzz(func(t *testing.T, b []byte) {
		acs, ok, err := sysfs.ParseACS(b)
		if ok && (err != nil || acs.Offset < 0x100 || acs.Offset+8 > len(b)) {
			t.Fatalf("ok with %+v, %v", acs, err)
		}
	})
}

func FuzzParseGUID(f *testing.F) {
	f.Add("0c42:a103:00a1:b2c4")
	f.Fuzz(func(t *testing.T, s string) { _, _ = sysfs.ParseGUID(s) })
}
