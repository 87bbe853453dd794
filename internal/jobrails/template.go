package jobrails

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/railyard-io/railyard/internal/dra"
)

// Options are what a template's requests name and carry.
type Options struct {
	// GPUClass is the DeviceClass of the GPUs (default "gpu.nvidia.com",
	// the NVIDIA DRA driver's).
	GPUClass string
	// NICClass is the DeviceClass of the NICs (default dra.DeviceClassName).
	NICClass string
	// Tolerations go on every request (DeviceRequest.exactly.tolerations):
	// the device taints the job accepts. Inventory must be given the same
	// (InventoryOptions.Tolerations) to count the devices they admit.
	Tolerations []resourceapi.DeviceToleration
	// NICRails, when set, numbers the set's rails in NIC order (Railyard
	// rail -> NIC rail, RailToNIC of NICOrder): the template then says both
	// (AnnotationNICRails).
	NICRails map[int64]int64
}

// DefaultGPUClass is the NVIDIA DRA driver's GPU DeviceClass.
const DefaultGPUClass = "gpu.nvidia.com"

// Labels and annotations on the template.
const (
	LabelJob        = "railyard.io/job"
	AnnotationRails = "railyard.io/rails"
	// AnnotationNICRails is the rail set in NIC order, as NVIDIA's
	// operators number rails (railPciAddresses, eth_r<i>).
	AnnotationNICRails = "railyard.io/nic-rails"
)

// ClaimTemplate is the job's ResourceClaimTemplate for rail set s: per GPU
// i a request gpu<i> whose selector takes one of its rail's GPUs (by
// resource.kubernetes.io/pciBusID) and a request nic<i> whose selector
// pins the rail (railyard.io/rail), with a matchAttribute constraint on
// pcieRoot between them (several rails can share a root: the selectors
// decide the rail, the constraint keeps the pair on one root). The GPU
// requests come first: the allocator then tries GPUs before NICs, and a
// node short of GPUs fails fast (docs/dra.md). Every request carries
// o.Tolerations.
func ClaimTemplate(name, namespace string, s Set, o Options) (*resourceapi.ResourceClaimTemplate, error) {
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: empty rail set", ErrInput)
	}
	if len(o.Tolerations) > resourceapi.DeviceTolerationsMaxLength {
		return nil, fmt.Errorf("%w: %d tolerations; a request holds %d", ErrInput, len(o.Tolerations), resourceapi.DeviceTolerationsMaxLength)
	}
	o.GPUClass = cmp.Or(o.GPUClass, DefaultGPUClass)
	o.NICClass = cmp.Or(o.NICClass, dra.DeviceClassName)
	var gpus, nics []resourceapi.DeviceRequest
	var cons []resourceapi.DeviceConstraint
	root := resourceapi.FullyQualifiedName(dra.AttrPCIeRoot)
	for _, r := range s {
		if len(r.BusIDs) == 0 {
			return nil, fmt.Errorf("%w: rail %d has no GPU addresses", ErrInput, r.Rail)
		}
		quoted := make([]string, len(r.BusIDs))
		for i, b := range r.BusIDs {
			quoted[i] = strconv.Quote(b)
		}
		// Each selector first asks whether the device has the attribute: CEL
		// fails on a missing key, and the allocator then fails the whole
		// claim on the node (a storage NIC with no rail, a GPU published
		// without pciBusID) instead of passing over that device.
		onRail := fmt.Sprintf(`"pciBusID" in device.attributes[%q] && device.attributes[%q].pciBusID in [%s]`,
			"resource.kubernetes.io", "resource.kubernetes.io", strings.Join(quoted, ", "))
		for range r.GPUs {
			i := strconv.Itoa(len(gpus))
			gpus = append(gpus, one("gpu"+i, o.GPUClass, onRail, o.Tolerations))
			nics = append(nics, one("nic"+i, o.NICClass,
				fmt.Sprintf(`"rail" in device.attributes[%q] && device.attributes[%q].rail == %d`, dra.Domain, dra.Domain, r.Rail), o.Tolerations))
			cons = append(cons, resourceapi.DeviceConstraint{Requests: []string{"gpu" + i, "nic" + i}, MatchAttribute: &root})
		}
	}
	if len(cons) > resourceapi.DeviceConstraintsMaxSize {
		return nil, fmt.Errorf("%w: %d GPUs need %d constraints; a claim holds %d", ErrInput, len(cons), len(cons), resourceapi.DeviceConstraintsMaxSize)
	}
	ann := map[string]string{AnnotationRails: s.String()}
	if o.NICRails != nil {
		nicSet, err := s.InNICOrder(o.NICRails)
		if err != nil {
			return nil, err
		}
		ann[AnnotationNICRails] = nicSet
	}
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels:      map[string]string{LabelJob: name},
			Annotations: ann},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: append(gpus, nics...), Constraints: cons,
		}}},
	}, nil
}

func one(name, class, cel string, tols []resourceapi.DeviceToleration) resourceapi.DeviceRequest {
	r := resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
	}}
	if cel != "" {
		r.Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: cel}}}
	}
	if len(tols) > 0 {
		r.Exactly.Tolerations = append([]resourceapi.DeviceToleration(nil), tols...)
	}
	return r
}
