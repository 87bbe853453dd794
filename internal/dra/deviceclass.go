package dra

import (
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeviceClassName is the DeviceClass of every Railyard RDMA device.
const DeviceClassName = "rdma.railyard.io"

// DeviceClass selects every device Railyard publishes. Claims narrow it
// with their own selectors (a link layer, a pool, VFs only).
func DeviceClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DeviceClassName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "` + DriverName + `"`,
		}}}},
	}
}

// PoolDeviceClassName is the DeviceClass of one Railyard pool:
// "rdma-vf.rdma.railyard.io" for "railyard.io/rdma_vf".
func PoolDeviceClassName(pool string) string { return poolBase(pool) + "." + DeviceClassName }

// PoolDeviceClass selects the devices of one Railyard pool (AttrPool) and
// serves the pool's extended resource through DRA (KEP-5004,
// DRAExtendedResource: beta and on in 1.36, GA in 1.37): a pod asking
// for "railyard.io/rdma_vf: 2" on a node whose pool is delivered by DRA
// gets two of its devices in a claim the scheduler makes, with no change
// to the pod. An API server without the feature drops the field, and such
// pods stay Pending on DRA nodes, as before.
func PoolDeviceClass(pool string) *resourceapi.DeviceClass {
	name := pool
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: PoolDeviceClassName(pool)},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.driver == "` + DriverName + `" && "pool" in device.attributes["` + Domain + `"] && device.attributes["` + Domain + `"].pool == "` + pool + `"`,
			}}},
			ExtendedResourceName: &name,
		},
	}
}
