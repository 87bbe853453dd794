package jobrails_test

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/dra/gpustandin"
	"github.com/railyard-io/railyard/internal/jobrails"
)

// compareRoom checks, for every set of whole rails giving a pod gpus GPUs
// that ChooseSet accepts on the cluster, that the nodes jobrails says
// have room for a pod are exactly those where the real allocator (as
// kube-scheduler 1.37 runs it, with what the cluster's claims hold)
// allocates the set's template now. It returns how many sets it checked
// and how many had room somewhere.
func compareRoom(t *testing.T, c *cluster, gpus int, tols []resourceapi.DeviceToleration) (sets, withRoom int) {
	t.Helper()
	inv := c.inventory(tols...)
	rails := map[int64]bool{}
	for _, n := range inv {
		for r := range n.Rails {
			rails[r] = true
		}
	}
	all := slices.Sorted(maps.Keys(rails))
	for mask := 1; mask < 1<<len(all); mask++ {
		var sub []int64
		for i, r := range all {
			if mask&(1<<i) != 0 {
				sub = append(sub, r)
			}
		}
		choice, err := jobrails.ChooseSet(inv, 1, gpus, sub)
		if errors.Is(err, jobrails.ErrInput) {
			continue
		}
		tmpl, err := jobrails.ClaimTemplate("job", "default", choice.Set, jobrails.Options{GPUClass: gpustandin.DeviceClassName, Tolerations: tols})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, n := range c.nodes {
			if c.allocate(t, claimOf("job-pod", tmpl.Spec.Spec), n) != nil {
				want = append(want, n)
			}
		}
		if diff := cmp.Diff(want, choice.Nodes); diff != "" {
			t.Errorf("rails %s (%d GPUs): nodes with room, the real allocator's (-want) and jobrails' (+got):\n%s", choice.Set, gpus, diff)
		}
		sets++
		if len(want) > 0 {
			withRoom++
		}
	}
	return sets, withRoom
}

// devicesOn are the devices of driver on node whose railyard.io/rail is
// rail (any rail for the GPU driver: its devices have none).
func (c *cluster) devicesOn(node, driver string, rail int64) []jobrails.Device {
	var out []jobrails.Device
	for _, s := range c.slices {
		if *s.Spec.NodeName != node || s.Spec.Driver != driver {
			continue
		}
		for _, d := range s.Spec.Devices {
			if a, ok := d.Attributes[dra.AttrRail]; driver == dra.DriverName && (!ok || *a.IntValue != rail) {
				continue
			}
			out = append(out, jobrails.Device{Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Name: d.Name})
		}
	}
	return out
}

// republish adds a newer generation of node's pool of driver, as a
// kubelet plugin does before it deletes the old slices: both are in the
// API for a while. keep filters the new generation's devices (nil: all).
func (c *cluster) republish(node, driver string, keep func(resourceapi.Device) bool) {
	for _, s := range slices.Clone(c.slices) {
		if *s.Spec.NodeName != node || s.Spec.Driver != driver {
			continue
		}
		n := s.DeepCopy()
		n.Name += "-gen2"
		n.Spec.Pool.Generation++
		if keep != nil {
			n.Spec.Devices = slices.DeleteFunc(n.Spec.Devices, func(d resourceapi.Device) bool { return !keep(d) })
		}
		c.slices = append(c.slices, n)
	}
}

// sharesClaim holds want shares of the shared NIC of rail.
func sharesClaim(name string, rail, want int64) *resourceapi.ResourceClaim {
	r := exactly("nic", dra.DeviceClassName)
	r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
		Expression: `"rail" in device.attributes["railyard.io"] && device.attributes["railyard.io"].rail == ` + strconv.FormatInt(rail, 10)}}}
	r.Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
		dra.CapacityShares: *resource.NewQuantity(want, resource.DecimalSI)}}
	return claimOf(name, resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{r}}})
}

func sharedPool(limit int) []v1alpha1.Pool {
	return []v1alpha1.Pool{{Name: "railyard.io/rdma_shared", DeviceKind: v1alpha1.KindShared, SharedLimit: &limit}}
}

var tolerateUnhealthy = []resourceapi.DeviceToleration{{Key: dra.TaintKey, Operator: resourceapi.DeviceTolerationOpExists}}

// TestRoomMatchesTheRealAllocator: on clusters in the states the defects
// came from (a NIC tainted NoSchedule by the firmware policy, a pool
// republishing or incomplete, shared NICs with shares left, claims with
// admin access, taints from DeviceTaintRules, taints with the None
// effect, tolerations that match and that do not), for every rail set
// and pod size, jobrails' room is the real allocator's.
func TestRoomMatchesTheRealAllocator(t *testing.T) {
	t.Parallel()
	roce := func(t *testing.T) *cluster { return newCluster(t, "roce-8gpu-4nic", "node-a", "node-b") }
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *cluster
		gpus  []int
		tols  []resourceapi.DeviceToleration
	}{
		{"fresh", roce, []int{2, 4, 8}, nil},
		{"node-b half used by a per-pod claim", func(t *testing.T) *cluster {
			c := roce(t)
			c.schedule(t, perPodClaim("other", 4), "node-a")
			return c
		}, []int{2, 4, 8}, nil},
		{"node-b's rail-2 NIC refused: tainted NoSchedule", func(t *testing.T) *cluster {
			return build(t, "roce-8gpu-4nic", nil, dra.Options{TaintUnhealthy: true}, refuse("node-b", 2), "node-a", "node-b")
		}, []int{2, 4}, nil},
		{"the refused NIC, tolerated", func(t *testing.T) *cluster {
			return build(t, "roce-8gpu-4nic", nil, dra.Options{TaintUnhealthy: true}, refuse("node-b", 2), "node-a", "node-b")
		}, []int{2, 4}, tolerateUnhealthy},
		{"the refused NIC, a toleration of another value", func(t *testing.T) *cluster {
			return build(t, "roce-8gpu-4nic", nil, dra.Options{TaintUnhealthy: true}, refuse("node-b", 2), "node-a", "node-b")
		}, []int{4}, []resourceapi.DeviceToleration{{Key: dra.TaintKey, Value: "port-down", Effect: resourceapi.DeviceTaintEffectNoSchedule}}},
		{"node-b's GPUs republishing (two generations listed)", func(t *testing.T) *cluster {
			c := roce(t)
			c.republish("node-b", gpustandin.DriverName, nil)
			return c
		}, []int{2, 4}, nil},
		{"node-b's NICs republishing without rail 4", func(t *testing.T) *cluster {
			c := roce(t)
			c.republish("node-b", dra.DriverName, func(d resourceapi.Device) bool { return *d.Attributes[dra.AttrRail].IntValue != 4 })
			return c
		}, []int{2, 4}, nil},
		{"node-b's GPU pool incomplete", func(t *testing.T) *cluster {
			c := roce(t)
			for _, s := range c.slices {
				if *s.Spec.NodeName == "node-b" && s.Spec.Driver == gpustandin.DriverName {
					s.Spec.Pool.Generation, s.Spec.Pool.ResourceSliceCount = 2, 2
				}
			}
			return c
		}, []int{2}, nil},
		{"shared NICs, 2 of 3 shares of node-b's rail 0 held", func(t *testing.T) *cluster {
			c := build(t, "roce-8gpu-4nic", sharedPool(3), dra.Options{ConsumableCapacity: true}, nil, "node-a", "node-b")
			if n, _ := c.schedule(t, sharesClaim("shares", 0, 2), "node-a"); n != "node-b" {
				t.Fatalf("the shares claim landed on %q", n)
			}
			return c
		}, []int{2, 4}, nil},
		{"dgx-h100, PF and VF pools, a per-pod claim on node-a", func(t *testing.T) *cluster {
			c := build(t, "dgx-h100", []v1alpha1.Pool{{Name: "railyard.io/rdma", DeviceKind: v1alpha1.KindVF}, {Name: "railyard.io/pf", DeviceKind: v1alpha1.KindPF}},
				dra.Options{}, nil, "node-a", "node-b")
			c.schedule(t, perPodClaim("other", 3))
			return c
		}, []int{2}, nil},
		{"a DeviceTaintRule NoExecute on node-a's rail-4 NICs", func(t *testing.T) *cluster {
			c := roce(t)
			for _, d := range c.devicesOn("node-a", dra.DriverName, 4) {
				c.rules = append(c.rules, &resourceapi.DeviceTaintRule{
					ObjectMeta: metav1.ObjectMeta{Name: "maintenance-" + d.Name},
					Spec: resourceapi.DeviceTaintRuleSpec{
						DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &d.Driver, Pool: &d.Pool, Device: &d.Name},
						Taint:          resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoExecute},
					},
				})
			}
			return c
		}, []int{4}, nil},
		{"node-b's GPUs held with admin access only", func(t *testing.T) *cluster {
			c := roce(t)
			admin := true
			held := claimOf("monitor", resourceapi.ResourceClaimSpec{})
			held.Status.Allocation = &resourceapi.AllocationResult{}
			for _, d := range c.devicesOn("node-b", gpustandin.DriverName, 0) {
				held.Status.Allocation.Devices.Results = append(held.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
					Request: "gpu", Driver: d.Driver, Pool: d.Pool, Device: d.Name, AdminAccess: &admin})
			}
			c.claims = append(c.claims, held)
			return c
		}, []int{4}, nil},
		{"node-b's NICs tainted with the None effect", func(t *testing.T) *cluster {
			c := roce(t)
			for _, s := range c.slices {
				if *s.Spec.NodeName == "node-b" && s.Spec.Driver == dra.DriverName {
					for i := range s.Spec.Devices {
						s.Spec.Devices[i].Taints = []resourceapi.DeviceTaint{{Key: "example.com/note", Effect: resourceapi.DeviceTaintEffectNone}}
					}
				}
			}
			return c
		}, []int{4}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.setup(t)
			for _, gpus := range tc.gpus {
				sets, withRoom := compareRoom(t, c, gpus, tc.tols)
				if sets == 0 || withRoom == 0 {
					t.Errorf("%d GPUs: %d rail sets checked, %d with room: the case proves nothing", gpus, sets, withRoom)
				}
			}
		})
	}
}
