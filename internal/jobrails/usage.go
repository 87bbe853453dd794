package jobrails

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// usage is what the cluster's allocated claims hold, counted as
// kube-scheduler counts it: a result with adminAccess holds nothing, a
// result with a share ID (a shared device, KEP-5075) holds the capacity it
// consumed, any other result the whole device.
type usage struct {
	whole    map[Device]bool
	consumed map[Device]map[resourceapi.QualifiedName]resource.Quantity
}

func usageOf(claims []*resourceapi.ResourceClaim) usage {
	u := usage{whole: map[Device]bool{}, consumed: map[Device]map[resourceapi.QualifiedName]resource.Quantity{}}
	for _, c := range claims {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := Device{Driver: r.Driver, Pool: r.Pool, Name: r.Device}
			if r.ShareID == nil {
				u.whole[id] = true
				continue
			}
			m := u.consumed[id]
			if m == nil {
				m = map[resourceapi.QualifiedName]resource.Quantity{}
				u.consumed[id] = m
			}
			for name, q := range r.ConsumedCapacity {
				sum := m[name]
				sum.Add(q)
				m[name] = sum
			}
		}
	}
	return u
}

// slots is how many more requests of the template device d takes: 1 for a
// device no claim holds, 0 for one a claim holds; for a device that allows
// multiple allocations, how many requests of its default size (a
// capacity's requestPolicy.default, else its whole value) its least
// plentiful capacity has left after what claims consumed.
func (u usage) slots(id Device, d resourceapi.Device) int {
	if u.whole[id] {
		return 0
	}
	if d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		return 1
	}
	n := unlimited
	for name, c := range d.Capacity {
		each := c.Value
		if c.RequestPolicy != nil && c.RequestPolicy.Default != nil {
			each = *c.RequestPolicy.Default
		}
		if each.Sign() <= 0 {
			continue
		}
		left := c.Value.DeepCopy()
		if used, ok := u.consumed[id][name]; ok {
			left.Sub(used)
		}
		if left.Sign() <= 0 {
			return 0
		}
		n = min(n, int(left.MilliValue()/each.MilliValue()))
	}
	return n
}

// ruleTaints are the taints of the DeviceTaintRules that select id (an
// unset selector field matches every value).
func ruleTaints(rules []*resourceapi.DeviceTaintRule, id Device) []resourceapi.DeviceTaint {
	var out []resourceapi.DeviceTaint
	for _, r := range rules {
		if r == nil {
			continue
		}
		if sel := r.Spec.DeviceSelector; sel != nil &&
			(sel.Driver != nil && *sel.Driver != id.Driver || sel.Pool != nil && *sel.Pool != id.Pool || sel.Device != nil && *sel.Device != id.Name) {
			continue
		}
		out = append(out, r.Spec.Taint)
	}
	return out
}

// untolerated are the taints that keep the allocator off a device for a
// request with tolerations tols: NoSchedule and NoExecute ones no
// toleration tolerates (None and unknown effects are ignored, as the
// allocator ignores them).
func untolerated(taints []resourceapi.DeviceTaint, tols []resourceapi.DeviceToleration) []resourceapi.DeviceTaint {
	var out []resourceapi.DeviceTaint
next:
	for _, t := range taints {
		if t.Effect != resourceapi.DeviceTaintEffectNoSchedule && t.Effect != resourceapi.DeviceTaintEffectNoExecute {
			continue
		}
		for _, tol := range tols {
			if resourceclaim.ToleratesTaint(tol, t) {
				continue next
			}
		}
		out = append(out, t)
	}
	return out
}

// taintString is "key=value:Effect", as kubectl writes node taints.
func taintString(t resourceapi.DeviceTaint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}
