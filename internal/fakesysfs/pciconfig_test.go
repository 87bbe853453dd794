package fakesysfs

import (
	"testing"

	"github.com/railyard-io/railyard/internal/sysfs"
)

func TestWriteConfigRoundTripsThroughSysfs(t *testing.T) {
	root := smallTree(t)
	want := uint16(sysfs.ACSSourceValidation | sysfs.ACSP2PRequestRedirect)
	if err := WriteConfig(root, "0000:17:01.0", ConfigSpace{Vendor: 0x10b5, Device: 0xc010, ACS: true, ACSControl: want}); err != nil {
		t.Fatal(err)
	}
	b, err := sysfs.New(root).PCIConfig("0000:17:01.0")
	if err != nil || len(b) != 4096 {
		t.Fatalf("config: %d bytes, %v", len(b), err)
	}
	acs, ok, err := sysfs.ParseACS(b)
	if err != nil || !ok || acs.Control != want || acs.Offset != 0x148 || !acs.Redirects() {
		t.Fatalf("ACS = %+v ok=%v err=%v", acs, ok, err)
	}
	if err := WriteConfig(root, "0000:17:00.0", ConfigSpace{ACS: true, Size: 64}); err != nil {
		t.Fatal(err)
	}
	b, _ = sysfs.New(root).PCIConfig("0000:17:00.0")
	if len(b) != 64 || sysfs.HasExtendedConfig(b) {
		t.Fatalf("unprivileged image: %d bytes", len(b))
	}
}
