package nodesetup

import "testing"

func TestVFKernelDriver(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ pf, vf, want string }{
		{"mlx5_core", "", "mlx5_core"},
		{"mlx5_core", "vfio-pci", "mlx5_core"},
		{"igb", "", "igbvf"},         // checked in the VM of make vmtest
		{"igb", "vfio-pci", "igbvf"}, // back from pass-through
		{"igb", "igbvf", "igbvf"},
		{"ixgbe", "", "ixgbevf"},
		{"ice", "", "iavf"},
		{"bnxt_en", "", "bnxt_en"},
		{"mlx5_core", "some_vf_driver", "some_vf_driver"}, // a kernel driver already bound is kept
	} {
		if got := vfKernelDriver(c.pf, c.vf); got != c.want {
			t.Errorf("vfKernelDriver(%q, %q) = %q, want %q", c.pf, c.vf, got, c.want)
		}
	}
}
