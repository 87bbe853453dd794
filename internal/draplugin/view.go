package draplugin

import (
	"bytes"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/railyard-io/railyard/internal/draview"
)

// reservedPods are the pods a claim is reserved for (status.reservedFor
// entries of core resource "pods"), in the API's order.
func reservedPods(c *resourceapi.ResourceClaim) []claimPod {
	var out []claimPod
	for _, r := range c.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" && r.Name != "" {
			out = append(out, claimPod{Name: r.Name, UID: r.UID})
		}
	}
	return out
}

// publishViewLocked writes the DRA view of the prepared claims when it
// changed since the last write (a failed write is retried at the next
// call: d.view is set only on success).
func (d *Driver) publishViewLocked() error {
	if d.cfg.ViewDir == "" {
		return nil
	}
	v := d.viewLocked()
	b, err := draview.Encode(v)
	if err != nil {
		return err
	}
	if d.view != nil && bytes.Equal(b, d.view) {
		return nil
	}
	if err := draview.WriteEncoded(d.cfg.ViewDir, b); err != nil {
		return err
	}
	d.view = b
	return nil
}

func (d *Driver) viewLocked() draview.View {
	var v draview.View
	for _, p := range d.cfg.Pools {
		v.Pools = append(v.Pools, p.Name)
	}
	for _, c := range d.claims {
		vc := draview.Claim{Namespace: c.Namespace, Name: c.Name, UID: string(c.UID), Pods: []draview.Pod{}, Devices: []draview.Device{}}
		for _, p := range c.Pods {
			vc.Pods = append(vc.Pods, draview.Pod{Name: p.Name, UID: string(p.UID)})
		}
		for _, pd := range c.Devices {
			if pd.AdminAccess {
				continue // looked at, never attached: its netdev is its owner's
			}
			vc.Devices = append(vc.Devices, draview.Device{PCI: pd.PCI, Resource: pd.Resource, RDMA: pd.RDMA, PF: pd.PF, Rail: pd.Rail, Share: pd.Share})
		}
		v.Claims = append(v.Claims, vc)
	}
	return v
}
