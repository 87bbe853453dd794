package benchverify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/dra"
	"github.com/railyard-io/railyard/internal/fabric"
	"github.com/railyard-io/railyard/internal/topology"
)

// NetworkStatusAnnotation is where Multus writes each attached network's
// interface, addresses and device-info document on the pod.
const NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

// maxAnnotation bounds an annotation read (the API server bounds all of
// a pod's annotations to 256 KiB).
const maxAnnotation = 256 << 10

// ResourcePrefix is the domain of Railyard's extended resources
// (railyard.io/rdma_vf): a container that asks for one holds an RDMA
// device from the device plugin, whether or not Multus names it.
const ResourcePrefix = "railyard.io/"

// NIC is an RDMA device Railyard gave a pod.
type NIC struct {
	// From is where it was found: "claim NAME" (DRA) or "network-status
	// NETWORK" (Multus, the device plugin's device-info document).
	From string `json:"from"`
	// Device is the DRA device name ("pci-0000-18-00-2"), PCI its PCI
	// address, RDMA its RDMA device ("mlx5_3").
	Device string `json:"device,omitempty"`
	PCI    string `json:"pci,omitempty"`
	RDMA   string `json:"rdma,omitempty"`
	// Rail and Leaf are its railyard.io/rail and railyard.io/leaf (nil,
	// "": unknown).
	Rail *int64 `json:"rail,omitempty"`
	Leaf string `json:"leaf,omitempty"`
	// Root is its resource.kubernetes.io/pcieRoot.
	Root string `json:"pcieRoot,omitempty"`
	// Interface and IPs are the pod's interface of it (networkData or
	// network-status).
	Interface string   `json:"interface,omitempty"`
	IPs       []string `json:"ips,omitempty"`
	// Class is its distance to the nearest of the pod's GPUs (PIX, PXB,
	// PHB, NODE, SYS; "" unknown), NearGPU that GPU's PCI address.
	Class   string `json:"class,omitempty"`
	NearGPU string `json:"nearGPU,omitempty"`

	classes map[string]topology.Class // by GPU PCI address
}

// GPU is a GPU a pod holds through a DRA claim.
type GPU struct {
	From   string `json:"from"`
	Driver string `json:"driver"`
	Device string `json:"device"`
	PCI    string `json:"pci,omitempty"`
	Root   string `json:"pcieRoot,omitempty"`
}

// deviceReader reads pods' devices, caching what pods share (ResourceSlices
// by driver, Nodes' fabric ports).
type deviceReader struct {
	c      kubernetes.Interface
	o      Options
	slices map[string]sliceSet
	ports  map[string]portSet
}

type sliceSet struct {
	devices map[[2]string]resourceapi.Device // by pool, device name (newest generation)
	err     error
}

type portSet struct {
	ports []fabric.Port
	err   error
}

func newDeviceReader(c kubernetes.Interface, o Options) *deviceReader {
	return &deviceReader{c: c, o: o, slices: map[string]sliceSet{}, ports: map[string]portSet{}}
}

// read fills out's NICs and GPUs from the pod's claims and its
// network-status annotation. Only ctx's end is an error; what cannot be
// read is a note.
func (d *deviceReader) read(ctx context.Context, p *corev1.Pod, out *Pod) error {
	for _, name := range claimNames(p) {
		if err := ctx.Err(); err != nil {
			return err
		}
		d.claim(ctx, name, out)
	}
	d.networkStatus(ctx, p, out)
	if len(out.NICs) == 0 {
		if res := railyardResources(p); len(res) > 0 {
			out.Resources = res
			out.Notes = append(out.Notes, "asks for "+strings.Join(res, ", ")+
				" from the device plugin, but no Multus network-status names the device: its NICs are not known here")
		}
	}
	nearness(out)
	return ctx.Err()
}

// claimNames are the ResourceClaims a pod uses: those it names, and
// those made from its templates (status.resourceClaimStatuses).
func claimNames(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			out = append(out, *c.ResourceClaimName)
		}
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil && !slices.Contains(out, *s.ResourceClaimName) {
			out = append(out, *s.ResourceClaimName)
		}
	}
	return out
}

func railyardResources(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Spec.Containers {
		for name := range c.Resources.Limits {
			if strings.HasPrefix(string(name), ResourcePrefix) && !slices.Contains(out, string(name)) {
				out = append(out, string(name))
			}
		}
	}
	slices.Sort(out)
	return out
}

// claim adds the devices of one allocated claim.
func (d *deviceReader) claim(ctx context.Context, name string, out *Pod) {
	rctx, cancel := context.WithTimeout(ctx, d.o.RequestTimeout)
	claim, err := d.c.ResourceV1().ResourceClaims(d.o.Namespace).Get(rctx, name, metav1.GetOptions{})
	cancel()
	if err != nil {
		out.Notes = append(out.Notes, fmt.Sprintf("claim %s: %v", name, err))
		return
	}
	alloc := claim.Status.Allocation
	if alloc == nil {
		out.Notes = append(out.Notes, fmt.Sprintf("claim %s is not allocated", name))
		return
	}
	from := "claim " + name
	for _, r := range alloc.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue // looks at a device, holds none
		}
		attrs, err := d.device(ctx, r.Driver, r.Pool, r.Device)
		if err != nil {
			out.Notes = append(out.Notes, fmt.Sprintf("%s: device %s/%s/%s: %v", from, r.Driver, r.Pool, r.Device, err))
		}
		if r.Driver != dra.DriverName {
			if isGPU(r.Driver) {
				out.GPUs = append(out.GPUs, GPU{From: from, Driver: r.Driver, Device: r.Device,
					PCI: str(attrs, dra.AttrPCIBusID), Root: str(attrs, dra.AttrPCIeRoot)})
			}
			continue
		}
		n := NIC{From: from, Device: r.Device, PCI: str(attrs, dra.AttrPCIBusID), RDMA: str(attrs, dra.AttrRDMADevice),
			Leaf: str(attrs, dra.AttrLeaf), Root: str(attrs, dra.AttrPCIeRoot), classes: map[string]topology.Class{}}
		if n.PCI == "" {
			n.PCI, _ = dra.PCIAddress(r.Device)
		}
		if a, ok := attrs[dra.AttrRail]; ok && a.IntValue != nil {
			n.Rail = a.IntValue
		}
		for k, a := range attrs {
			gpu, ok := strings.CutPrefix(string(k), dra.GPUClassPrefix)
			if !ok || a.StringValue == nil {
				continue
			}
			if c, err := topology.ParseClass(*a.StringValue); err == nil {
				n.classes[gpuPCI(gpu)] = c
			}
		}
		for _, s := range claim.Status.Devices {
			if s.Driver == r.Driver && s.Pool == r.Pool && s.Device == r.Device && s.NetworkData != nil {
				n.Interface, n.IPs = s.NetworkData.InterfaceName, s.NetworkData.IPs
			}
		}
		out.NICs = append(out.NICs, n)
	}
}

// isGPU says whether another driver's device is a GPU: by its driver's
// name (gpu.nvidia.com, gpu.amd.com, gpu.intel.com).
func isGPU(driver string) bool { return strings.Contains(driver, "gpu") }

// gpuPCI turns a class attribute's GPU ID back into a PCI address
// ("0000_1b_00_0" -> "0000:1b:00.0"), as dra.GPUClassAttribute built it.
func gpuPCI(id string) string {
	parts := strings.Split(id, "_")
	if len(parts) != 4 {
		return id
	}
	return parts[0] + ":" + parts[1] + ":" + parts[2] + "." + parts[3]
}

func str(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, name resourceapi.QualifiedName) string {
	if a, ok := attrs[name]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}

// device returns a published device's attributes, from the newest
// generation of its pool (the driver's slices are listed once).
func (d *deviceReader) device(ctx context.Context, driver, pool, name string) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, error) {
	set, ok := d.slices[driver]
	if !ok {
		set = d.listSlices(ctx, driver)
		d.slices[driver] = set
	}
	if set.err != nil {
		return nil, set.err
	}
	dev, ok := set.devices[[2]string{pool, name}]
	if !ok {
		return nil, fmt.Errorf("in no ResourceSlice of the driver")
	}
	return dev.Attributes, nil
}

func (d *deviceReader) listSlices(ctx context.Context, driver string) sliceSet {
	ctx, cancel := context.WithTimeout(ctx, d.o.RequestTimeout)
	defer cancel()
	list, err := d.c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: resourceapi.ResourceSliceSelectorDriver + "=" + driver})
	if err != nil {
		return sliceSet{err: fmt.Errorf("listing the ResourceSlices of %s: %w", driver, err)}
	}
	set := sliceSet{devices: map[[2]string]resourceapi.Device{}}
	gen := map[string]int64{}
	for _, s := range list.Items {
		if s.Spec.Driver != driver { // a client that ignores the field selector
			continue
		}
		p := s.Spec.Pool
		if g, seen := gen[p.Name]; seen && g > p.Generation {
			continue
		}
		gen[p.Name] = p.Generation
		for _, dev := range s.Spec.Devices {
			set.devices[[2]string{p.Name, dev.Name}] = dev
		}
	}
	return set
}

// networkStatusEntry is one network of Multus's network-status
// annotation.
type networkStatusEntry struct {
	Name       string                `json:"name"`
	Interface  string                `json:"interface"`
	IPs        []string              `json:"ips"`
	DeviceInfo *containerdev.DevInfo `json:"device-info"`
}

// networkStatus adds the devices Multus names (device-info) that no claim
// gave already, with their rails from the node's fabric ports.
func (d *deviceReader) networkStatus(ctx context.Context, p *corev1.Pod, out *Pod) {
	raw := p.Annotations[NetworkStatusAnnotation]
	if raw == "" {
		return
	}
	if len(raw) > maxAnnotation {
		out.Notes = append(out.Notes, fmt.Sprintf("%s: %d bytes, more than %d", NetworkStatusAnnotation, len(raw), maxAnnotation))
		return
	}
	var entries []networkStatusEntry
	if err := json.Unmarshal([]byte(raw), &entries); err != nil {
		out.Notes = append(out.Notes, fmt.Sprintf("%s does not decode: %v", NetworkStatusAnnotation, err))
		return
	}
	for _, e := range entries {
		if e.DeviceInfo == nil || e.DeviceInfo.Type != "pci" || e.DeviceInfo.PCI.PCIAddress == "" {
			continue
		}
		pci := e.DeviceInfo.PCI
		if slices.ContainsFunc(out.NICs, func(n NIC) bool { return n.PCI == pci.PCIAddress }) {
			continue // a claim's device, attached by Multus too
		}
		n := NIC{From: "network-status " + e.Name, PCI: pci.PCIAddress, RDMA: pci.RDMADevice, Interface: e.Interface, IPs: e.IPs}
		if n.RDMA != "" && pci.PFPCIAddress == "" {
			n.Rail = d.railOf(ctx, p.Spec.NodeName, n.RDMA, out)
		}
		out.NICs = append(out.NICs, n)
	}
}

// railOf is the rail of a whole NIC on a node, from the node's
// railyard.io/fabric-ports (nil: unknown).
func (d *deviceReader) railOf(ctx context.Context, node, rdma string, out *Pod) *int64 {
	if node == "" {
		return nil
	}
	set, ok := d.ports[node]
	if !ok {
		set = d.readPorts(ctx, node)
		d.ports[node] = set
	}
	if set.err != nil {
		if !slices.Contains(out.Notes, set.err.Error()) {
			out.Notes = append(out.Notes, set.err.Error())
		}
		return nil
	}
	for _, p := range set.ports {
		if p.NIC == rdma && p.Rail >= 0 {
			r := int64(p.Rail)
			return &r
		}
	}
	return nil
}

func (d *deviceReader) readPorts(ctx context.Context, node string) portSet {
	ctx, cancel := context.WithTimeout(ctx, d.o.RequestTimeout)
	defer cancel()
	n, err := d.c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return portSet{err: fmt.Errorf("node %s: %w", node, err)}
	}
	raw, ok := n.Annotations[fabric.PortsAnnotation]
	if !ok {
		return portSet{err: fmt.Errorf("node %s has no %s: rails of its Multus devices unknown", node, fabric.PortsAnnotation)}
	}
	ports, err := fabric.DecodePorts(raw)
	if err != nil {
		return portSet{err: fmt.Errorf("node %s: %w", node, err)}
	}
	return portSet{ports: ports}
}

// nearness sets each NIC's class to the nearest of the pod's GPUs, from
// its per-GPU class attributes.
func nearness(out *Pod) {
	for i := range out.NICs {
		n := &out.NICs[i]
		best := topology.ClassUnknown
		for _, g := range out.GPUs {
			c, ok := n.classes[g.PCI]
			if !ok || g.PCI == "" {
				continue
			}
			if best == topology.ClassUnknown || c.Rank() < best.Rank() {
				best, n.NearGPU = c, g.PCI
			}
		}
		if best != topology.ClassUnknown {
			n.Class = best.String()
		}
	}
}
