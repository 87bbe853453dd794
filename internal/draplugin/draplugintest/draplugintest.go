// Package draplugintest makes client-go's fake clientset answer what a
// DRA driver asks the API server beyond plain CRUD, for tests of the
// driver and of the agent that runs it. No real API server here: the
// multi-node e2e suite checks the real ones' answers.
package draplugintest

import (
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/railyard-io/railyard/internal/draplugin"
)

// What the API servers of the releases Railyard is tested on keep.
var (
	Release135 = draplugin.ServerFeatures{}
	Release137 = draplugin.ServerFeatures{Taints: true, ConsumableCapacity: true}
)

// DryRunSlices makes c answer a dry-run create of a ResourceSlice as an
// API server does: validated (a node and a driver), returned as it would
// be stored, and not stored. keeps says which fields this server keeps:
// device taints (DRADeviceTaints) and consumable capacity
// (DRAConsumableCapacity), both kept by Kubernetes 1.37 (Release137) and
// dropped by 1.35 (Release135), as its strategy drops them. The fake
// itself ignores dry runs and would store the probe
// (draplugin.ProbeFeatures).
func DryRunSlices(c *fake.Clientset, keeps draplugin.ServerFeatures) {
	c.PrependReactor("create", "resourceslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateActionImpl)
		if !ok || len(ca.CreateOptions.DryRun) == 0 {
			return false, nil, nil
		}
		s := ca.GetObject().(*resourceapi.ResourceSlice).DeepCopy()
		if s.Spec.NodeName == nil || s.Spec.Driver == "" {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceSlice"}, s.Name, nil)
		}
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			if !keeps.Taints {
				dev.Taints = nil
			}
			if !keeps.ConsumableCapacity {
				dev.AllowMultipleAllocations = nil
				for name, c := range dev.Capacity {
					c.RequestPolicy = nil
					dev.Capacity[name] = c
				}
			}
		}
		return true, s, nil
	})
}
