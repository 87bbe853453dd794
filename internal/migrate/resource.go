package migrate

import (
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
	"github.com/railyard-io/railyard/internal/containerdev"
)

// userspaceDrivers bind a device for DPDK or VMs: no netdev, no verbs
// device, and a /dev/vfio or /dev/uio node Railyard does not hand out.
var userspaceDrivers = map[string]bool{"vfio-pci": true, "igb_uio": true, "uio_pci_generic": true}

// linkTypeLayers maps the plugin's link types (the kernel's encapsulation
// names, compared exactly) to Railyard's link layers.
var linkTypeLayers = map[string]string{"ether": v1alpha1.LinkLayerEthernet, "infiniband": v1alpha1.LinkLayerInfiniBand}

// mapped is one selector object in Railyard's terms.
type mapped struct {
	sel v1alpha1.Selectors
	// empty: a selector list lost every value, so the plugin's object
	// matched nothing Railyard can select.
	empty   bool
	why     string
	rdmaDev bool // isRdma: the plugin mounted every RDMA char device
	ev      []evidence
}

// convertResource turns one resource into a pool, or reports why not.
func convertResource(r *Report, res resource, opts Options) (v1alpha1.Pool, bool) {
	n := res.name
	for _, k := range res.ignored {
		if strings.EqualFold(k, "isRdma") {
			// The plugin reads isRdma in selectors only: this one changed
			// nothing, and neither does it here.
			r.add(n, k, Dropped, "at the resource's top level the plugin ignores isRdma (it reads selectors.isRdma only): "+
				"its devices got no RDMA device nodes, and rdmaCapable is not set here either; move it into selectors if RDMA was meant")
			continue
		}
		r.add(n, k, Note, "ignored, as the plugin ignores unknown keys")
	}
	switch res.DeviceType {
	case dpAccelerator:
		r.add(n, "deviceType", Skipped, "accelerator: Railyard serves RDMA network devices, not accelerators (FPGA, QAT); keep the SR-IOV device plugin for this resource")
		return v1alpha1.Pool{}, false
	case dpAuxNetDevice:
		r.add(n, "deviceType", Skipped, "auxNetDevice: Railyard does not hand out auxiliary devices (subfunctions); keep the SR-IOV device plugin for this resource")
		return v1alpha1.Pool{}, false
	}
	for i, s := range res.selectors {
		if s.VdpaType != "" {
			r.add(n, res.selectorField(i)+".vdpaType", Skipped, "%q: the resource hands out vDPA devices; Railyard hands out RDMA verbs devices, not vhost-vdpa or virtio-vdpa", s.VdpaType)
			return v1alpha1.Pool{}, false
		}
	}
	if res.ResourcePrefix == "" {
		r.add(n, "resourcePrefix", Changed, "not set: pool name %s with the plugin's default prefix (--resource-prefix)", n)
	} else {
		r.add(n, "resourceName", Changed, "resourcePrefix/resourceName -> pool name %s", n)
	}
	if msg := rejects(v1alpha1.Pool{Name: n}); msg != "" {
		r.add(n, "resourceName", Skipped, "Railyard does not accept the name: %s", msg)
		return v1alpha1.Pool{}, false
	}
	if dp, ry := pluginEnvName(res), containerdev.EnvName(n); dp != ry {
		r.add(n, "resourceName", Note, "the plugin named the containers' variable %s, Railyard names it %s "+
			"('-' becomes '_'): change programs that read it by name", dp, ry)
	}
	if res.ExcludeTopology {
		r.add(n, "excludeTopology", Dropped, "Railyard tells kubelet each device's NUMA node (when sysfs knows it) and has no switch to stop")
	}
	if len(res.AdditionalInfo) > 0 {
		r.add(n, "additionalInfo", Dropped, "Railyard puts no extra information in the device-info file or environment")
	}
	var objs []mapped
	for i, s := range res.selectors {
		f := res.selectorField(i)
		for _, k := range res.unknown[i] {
			r.add(n, f+"."+k, Note, "ignored, as the plugin ignores keys its %s selectors do not have", res.DeviceType)
		}
		objs = append(objs, mapSelector(r, n, f, s))
	}
	var ev []evidence
	for i, m := range objs {
		if m.empty {
			r.add(n, res.selectorField(i), Dropped, "matches nothing Railyard can select (%s): left out", m.why)
			continue
		}
		ev = append(ev, m.ev...)
	}
	if allEmpty(objs) {
		r.add(n, "selectors", Skipped, "no selector object matches anything Railyard can select")
		return v1alpha1.Pool{}, false
	}
	sel, rdmaDev := merge(r, n, res, objs)
	kind := decideKind(r, n, ev, opts.DeviceKind)
	p := v1alpha1.Pool{Name: n, DeviceKind: kind, Policy: v1alpha1.PolicyGPUAware, Selectors: sel}
	if rdmaDev {
		p.DeviceNodes = v1alpha1.DeviceNodes{UMAD: true, ISSM: true}
		r.add(n, "selectors.isRdma", Note, "the plugin mounted every char device of the RDMA device (uverbs, umad, issm, rdma_cm): "+
			"deviceNodes umad and issm set to match; issm lets a container act on the subnet manager's behalf, turn it off unless needed")
	} else {
		r.add(n, "selectors.isRdma", Note, "not set: the plugin handed out devices with or without RDMA and mounted no RDMA device; "+
			"Railyard advertises a device without a verbs device as unhealthy and always gives the uverbs node and rdma_cm")
	}
	kindNotes(r, n, res, p)
	if msg := rejects(p); msg != "" { // the checks above keep this from happening
		r.add(n, "selectors", Skipped, "Railyard rejects the converted pool: %s", msg)
		return v1alpha1.Pool{}, false
	}
	return p, true
}

func allEmpty(objs []mapped) bool {
	for _, m := range objs {
		if !m.empty {
			return false
		}
	}
	return true
}

// pluginEnvName is the plugin's PCIDEVICE variable (pool_stub.go GetEnvs):
// only dots become '_'.
func pluginEnvName(res resource) string {
	prefix, _, _ := strings.Cut(res.name, "/")
	key := "PCIDEVICE_" + prefix + "_" + res.ResourceName
	return strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// kindNotes are the differences in matching that depend on the kind.
func kindNotes(r *Report, n string, res resource, p v1alpha1.Pool) {
	var addrs, pfNames bool
	for _, s := range res.selectors {
		addrs = addrs || len(s.PCIAddresses) > 0
		pfNames = pfNames || len(s.PFNames) > 0
	}
	switch p.DeviceKind {
	case v1alpha1.KindVF:
		if addrs {
			r.add(n, "pciAddresses", Note, "in a vf pool Railyard matches a VF by its own address or its PF's: a PF's address "+
				"selects all its VFs, where the plugin matched that PF only")
		}
		if k, _ := idsKind(p.Selectors.Vendors, p.Selectors.Devices); len(p.Selectors.Devices) > 0 && k != v1alpha1.KindVF {
			r.add(n, "devices", Note, "in a vf pool Railyard matches a VF by its own device ID or its PF's; the plugin compared the VF's own ID")
		}
	case v1alpha1.KindPF:
		if pfNames {
			r.add(n, "pfNames", Note, "a pf pool matches the PF by name and ignores VF index ranges")
		}
	}
}

// mapSelector maps one selector object field by field.
func mapSelector(r *Report, n, f string, s dpSelector) mapped {
	m := mapped{rdmaDev: s.IsRdma, ev: selectorEvidence(f, s)}
	keep := func(field string, values []string, valid func(string) string) []string {
		var out []string
		for _, v := range values {
			if msg := valid(v); msg != "" {
				r.add(n, f+"."+field, Dropped, "%q: %s", v, msg)
				continue
			}
			out = append(out, v)
		}
		if len(values) > 0 && len(out) == 0 && !m.empty {
			m.empty, m.why = true, "no value of "+field+" is usable"
		}
		return out
	}
	notHex := "Railyard wants a 4-digit hex PCI ID; the plugin compared it as text with sysfs's and matched nothing"
	m.sel.Vendors = keep("vendors", s.Vendors, func(v string) string {
		return ifRejected(v1alpha1.Selectors{Vendors: []string{v}}, notHex)
	})
	m.sel.Devices = keep("devices", s.Devices, func(v string) string {
		return ifRejected(v1alpha1.Selectors{Devices: []string{v}}, notHex)
	})
	m.sel.Drivers = keep("drivers", s.Drivers, func(v string) string {
		if userspaceDrivers[v] {
			return "a device bound to " + v + " has no netdev and no verbs device; Railyard hands out no /dev/vfio or /dev/uio nodes"
		}
		return ifRejected(v1alpha1.Selectors{Drivers: []string{v}}, "not a kernel driver name")
	})
	for _, d := range m.sel.Drivers {
		if d == "mlx5_ib" {
			r.add(n, f+".drivers", Note, "mlx5_ib is not a PCI driver (mlx5 functions are bound to mlx5_core): the plugin matched nothing with it; kept as is, use mlx5_core")
		}
	}
	m.sel.PCIAddresses = keep("pciAddresses", s.PCIAddresses, func(v string) string {
		return ifRejected(v1alpha1.Selectors{PCIAddresses: []string{v}}, "not a PCI address DDDD:BB:DD.F")
	})
	m.sel.PFNames = keep("pfNames", s.PFNames, func(v string) string {
		if _, err := v1alpha1.ParsePFName(v); err != nil {
			return "the plugin could not parse it either and matched nothing: " + err.Error()
		}
		return ""
	})
	mapRootDevices(r, n, f, s, &m, keep)
	layers := keep("linkTypes", s.LinkTypes, func(v string) string {
		if linkTypeLayers[v] == "" {
			return "the plugin compares link types exactly with the kernel's names (ether, infiniband); Railyard selects Ethernet or InfiniBand only"
		}
		return ""
	})
	for _, v := range layers {
		m.sel.LinkLayers = append(m.sel.LinkLayers, linkTypeLayers[v])
	}
	if len(layers) > 0 {
		r.add(n, f+".linkTypes", Changed, "%v -> linkLayers %v", layers, m.sel.LinkLayers)
	}
	if s.IsRdma {
		yes := true
		m.sel.RDMACapable = &yes
		r.add(n, f+".isRdma", Changed, "true -> rdmaCapable: true")
	}
	for _, d := range []struct {
		field  string
		values []string
		why    string
	}{
		{"ddpProfiles", s.DDPProfiles, "Railyard does not read Intel DDP profiles: the pool selects devices whatever their profile"},
		{"pKeys", s.PKeys, "Railyard does not read InfiniBand partition keys: the pool selects devices whatever their pkey"},
		{"acpiIndexes", s.ACPIIndexes, "Railyard does not read ACPI indexes: use pfNames or pciAddresses"},
	} {
		if len(d.values) > 0 {
			r.add(n, f+"."+d.field, Dropped, "%v: %s (the pool may select more devices than before)", d.values, d.why)
		}
	}
	if s.NeedVhostNet {
		r.add(n, f+".needVhostNet", Dropped, "true: Railyard does not mount /dev/vhost-net or /dev/net/tun")
	}
	return m
}

// mapRootDevices: rootDevices ("<PF address>[#ranges]") become
// pciAddresses, which in a vf pool match a VF by its PF's address.
func mapRootDevices(r *Report, n, f string, s dpSelector, m *mapped, keep func(string, []string, func(string) string) []string) {
	if len(s.RootDevices) == 0 {
		return
	}
	if len(s.PCIAddresses) > 0 {
		r.add(n, f+".rootDevices", Dropped, "%v: with pciAddresses in the same selector the plugin wanted both to match; "+
			"Railyard has one address list (either matches): kept pciAddresses", s.RootDevices)
		return
	}
	addrs := keep("rootDevices", s.RootDevices, func(v string) string {
		addr, _, _ := strings.Cut(v, "#")
		return ifRejected(v1alpha1.Selectors{PCIAddresses: []string{addr}}, "not a PCI address DDDD:BB:DD.F")
	})
	for _, v := range addrs {
		addr, ranges, hasRange := strings.Cut(v, "#")
		m.sel.PCIAddresses = append(m.sel.PCIAddresses, addr)
		if hasRange {
			r.add(n, f+".rootDevices", Dropped, "%q: VF range #%s: Railyard's pciAddresses take no range, the pool gets every VF of %s "+
				"(select by PF name with a range, pfNames: [\"<netdev>#%s\"], to keep it)", v, ranges, addr, ranges)
		}
	}
	if len(addrs) > 0 {
		r.add(n, f+".rootDevices", Changed, "%v -> pciAddresses %v (a VF matches by its PF's address)", addrs, m.sel.PCIAddresses)
	}
}

// merge combines the selector objects that match something into one
// Railyard selector: exactly when they differ in at most one field (the
// union of that field then selects the union of the objects' devices),
// else the first of them only, and the others are reported dropped.
func merge(r *Report, n string, res resource, objs []mapped) (v1alpha1.Selectors, bool) {
	var live []mapped
	var liveIdx []int
	rdmaDev := false
	for i, m := range objs {
		if !m.empty {
			live, liveIdx = append(live, m), append(liveIdx, i)
			rdmaDev = rdmaDev || m.rdmaDev
		}
	}
	if len(live) == 1 {
		return live[0].sel, rdmaDev
	}
	first := fields(live[0].sel)
	differ := map[string]bool{}
	for _, m := range live[1:] {
		for k, v := range fields(m.sel) {
			if v != first[k] {
				differ[k] = true
			}
		}
	}
	if len(differ) <= 1 {
		out := live[0].sel
		for k := range differ {
			out = union(k, live)
			r.add(n, "selectors", Changed, "%d selector objects merged into one: they differ only in %s, whose union selects the same devices", len(live), k)
		}
		return out, rdmaDev
	}
	for _, i := range liveIdx[1:] {
		r.add(n, res.selectorField(i), Dropped, "a Railyard pool has one selector (every field must match) and this object differs "+
			"from %s in more than one field: its devices are not in the pool; give them a pool of their own", res.selectorField(liveIdx[0]))
	}
	return live[0].sel, rdmaDev
}

// fields renders each selector field for comparison.
func fields(s v1alpha1.Selectors) map[string]string {
	rdma := ""
	if s.RDMACapable != nil {
		rdma = fmt.Sprint(*s.RDMACapable)
	}
	return map[string]string{
		"vendors": fmt.Sprint(s.Vendors), "devices": fmt.Sprint(s.Devices), "drivers": fmt.Sprint(s.Drivers),
		"pfNames": fmt.Sprint(s.PFNames), "pciAddresses": fmt.Sprint(s.PCIAddresses),
		"linkLayers": fmt.Sprint(s.LinkLayers), "rdmaCapable": rdma,
	}
}

// union returns the first object's selector with field k set to the union
// of every object's values; an object without values for k matches any.
func union(k string, live []mapped) v1alpha1.Selectors {
	out := live[0].sel
	get := map[string]func(*v1alpha1.Selectors) *[]string{
		"vendors": func(s *v1alpha1.Selectors) *[]string { return &s.Vendors },
		"devices": func(s *v1alpha1.Selectors) *[]string { return &s.Devices },
		"drivers": func(s *v1alpha1.Selectors) *[]string { return &s.Drivers },
		"pfNames": func(s *v1alpha1.Selectors) *[]string { return &s.PFNames },
		"pciAddresses": func(s *v1alpha1.Selectors) *[]string {
			return &s.PCIAddresses
		},
		"linkLayers": func(s *v1alpha1.Selectors) *[]string { return &s.LinkLayers },
	}
	if k == "rdmaCapable" {
		for _, m := range live {
			if m.sel.RDMACapable == nil {
				out.RDMACapable = nil
			}
		}
		return out
	}
	var all []string
	for _, m := range live {
		s := m.sel
		vals := *get[k](&s)
		if len(vals) == 0 {
			all = nil
			break
		}
		for _, v := range vals {
			if !contains(all, v) {
				all = append(all, v)
			}
		}
	}
	*get[k](&out) = all
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// rejects returns Railyard's validation of a pool, "" when it passes.
func rejects(p v1alpha1.Pool) string {
	if p.Name == "" {
		p.Name = "example.com/x"
	}
	c := &v1alpha1.AgentConfig{Pools: []v1alpha1.Pool{p}}
	v1alpha1.Default(c)
	errs := v1alpha1.Validate(c)
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.ErrorBody()
	}
	return strings.Join(msgs, "; ")
}

// ifRejected returns why when Railyard rejects a pool with selectors s.
func ifRejected(s v1alpha1.Selectors, why string) string {
	if rejects(v1alpha1.Pool{Selectors: s}) != "" {
		return why
	}
	return ""
}
