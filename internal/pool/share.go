package pool

import (
	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/deviceid"
)

// shares returns n shares of the PF device pf, each with its health.
func shares(pf Device, n int) []Device {
	out := make([]Device, n)
	for k := range out {
		d := pf
		d.ID, d.Kind, d.Share = deviceid.Share(pf.PF, k), v1alpha1.KindShared, k
		out[k] = d
	}
	return out
}
