package dra_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/machines"
)

// A node's pools are served one way each; a device selected by a DRA pool
// and a device plugin pool is an error naming the device and both pools
// (a share of a PF is the PF), and disjoint pools are fine.
func TestCheckExclusive(t *testing.T) {
	topo, err := machines.Topology(context.Background(), "dgx-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	dra0 := v1alpha1.Pool{Name: "railyard.io/dra_numa0", Delivery: v1alpha1.DeliveryDRA, Selectors: v1alpha1.Selectors{NUMANodes: []int{0}}}
	for name, tc := range map[string]struct {
		pools []v1alpha1.Pool
		want  []string // devices named in the error; nil: no error
	}{
		"disjoint": {[]v1alpha1.Pool{dra0, {Name: "railyard.io/dp_numa1", Delivery: v1alpha1.DeliveryDevicePlugin, Selectors: v1alpha1.Selectors{NUMANodes: []int{1}}}}, nil},
		"same VFs": {[]v1alpha1.Pool{dra0, {Name: "railyard.io/dp_all", Delivery: v1alpha1.DeliveryDevicePlugin}},
			[]string{"0000:05:00.1 (DRA pool railyard.io/dra_numa0, device plugin pool railyard.io/dp_all)", "0000:0c:00.2"}},
		"shares of a DRA PF": {[]v1alpha1.Pool{
			{Name: "railyard.io/dra_pf", Delivery: v1alpha1.DeliveryDRA, DeviceKind: v1alpha1.KindPF, Selectors: v1alpha1.Selectors{PCIAddresses: []string{"0000:84:00.0"}}},
			{Name: "railyard.io/dp_shared", DeviceKind: v1alpha1.KindShared, Selectors: v1alpha1.Selectors{NUMANodes: []int{1}}},
		}, []string{"0000:84:00.0 (DRA pool railyard.io/dra_pf, device plugin pool railyard.io/dp_shared)"}},
		"VFs and their PF are different devices": {[]v1alpha1.Pool{dra0, {Name: "railyard.io/dp_pf", DeviceKind: v1alpha1.KindPF}}, nil},
	} {
		for i := range tc.pools {
			v1alpha1.Default(&v1alpha1.AgentConfig{Pools: tc.pools[i : i+1]})
		}
		err := dra.CheckExclusive(topo, tc.pools)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, dra.ErrBothDeliveries) {
			t.Fatalf("%s: %v, want ErrBothDeliveries", name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", name, err, w)
			}
		}
	}
}
