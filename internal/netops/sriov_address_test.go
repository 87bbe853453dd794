package netops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

// TestSRIOVSysfsWantsKernelAddressesNoKernel: a PF or VF address must be the
// kernel's form (pciaddr.IsCanonical) before it becomes a path below
// bus/pci/devices; nothing is written for anything else.
func TestSRIOVSysfsWantsKernelAddressesNoKernel(t *testing.T) {
	s := netops.SRIOVSysfs{Root: t.TempDir()}
	for _, addr := range []string{"", "..", "pf0", "0000:1B:00.0", "00000000:1b:00.0", "0000:1b:20.0", "0000:1b:00.0/../x"} {
		if err := s.SetNumVFs(context.Background(), addr, 1); !errors.Is(err, pciaddr.ErrInvalid) {
			t.Errorf("SetNumVFs(%q) = %v, want pciaddr.ErrInvalid", addr, err)
		}
	}
}
