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
