package v1alpha1

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/firmware"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

var (
	hexID = regexp.MustCompile(`^(0x)?[0-9a-fA-F]{4}$`)
)

// Validate checks a defaulted configuration and returns every problem.
func Validate(c *AgentConfig) field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), c.APIVersion, []string{APIVersion}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), c.Kind, []string{Kind}))
	}
	for _, f := range []struct{ name, value string }{
		{"sysfsRoot", c.SysfsRoot}, {"devRoot", c.DevRoot}, {"pluginDir", c.PluginDir},
		{"podResourcesSocket", c.PodResourcesSocket}, {"devInfoDir", c.DevInfoDir}, {"stateDir", c.StateDir},
	} {
		if !strings.HasPrefix(f.value, "/") {
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.value, "must be an absolute path"))
		}
	}
	errs = append(errs, validateNCCL(c)...)
	if c.MetricsAddr != "0" {
		if _, port, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("metricsAddr"), c.MetricsAddr, "must be host:port, or \"0\" to disable"))
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			errs = append(errs, field.Invalid(field.NewPath("metricsAddr"), c.MetricsAddr, "port must be 0-65535"))
		}
	}
	if d := c.ResyncInterval; d != nil && (d.Duration < MinResyncInterval || d.Duration > MaxResyncInterval) {
		errs = append(errs, field.Invalid(field.NewPath("resyncInterval"), d.Duration.String(),
			fmt.Sprintf("must be %s to %s", MinResyncInterval, MaxResyncInterval)))
	}
	if d := c.PortPollInterval; d != nil && d.Duration != 0 && (d.Duration < MinPortPollInterval || d.Duration > MaxPortPollInterval) {
		errs = append(errs, field.Invalid(field.NewPath("portPollInterval"), d.Duration.String(),
			fmt.Sprintf("must be %s to %s, or 0s to disable the poll", MinPortPollInterval, MaxPortPollInterval)))
	}
	errs = append(errs, validateErrorCounters(c.ErrorCounters)...)
	if fw := c.Firmware; fw != nil {
		if _, err := firmware.NewPolicy(fw.Minimum, fw.RefuseKnownIssues); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") { // errors.Join: one per bad entry
				errs = append(errs, field.Invalid(field.NewPath("firmware"), field.OmitValueType{}, line))
			}
		}
	}
	for i, r := range c.GPUResourceNames {
		errs = append(errs, validateResourceName(field.NewPath("gpuResourceNames").Index(i), r)...)
	}
	if len(c.Pools) == 0 {
		errs = append(errs, field.Required(field.NewPath("pools"), "at least one pool"))
	}
	seen := map[string]int{}
	for i := range c.Pools {
		p := field.NewPath("pools").Index(i)
		errs = append(errs, validatePool(p, &c.Pools[i])...)
		errs = append(errs, validateBinding(p, c, &c.Pools[i])...)
		errs = append(errs, validateDelivery(p, c, &c.Pools[i])...)
		if j, dup := seen[c.Pools[i].Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also pools[%d])", c.Pools[i].Name, j)))
		} else {
			seen[c.Pools[i].Name] = i
		}
	}
	return errs
}

// validateNCCL checks ncclIBHCA and the directories it uses.
func validateNCCL(c *AgentConfig) field.ErrorList {
	var errs field.ErrorList
	modes := []string{NCCLIBHCAEnv, NCCLIBHCAMerged}
	if !contains(modes, c.NCCLIBHCA) {
		errs = append(errs, field.NotSupported(field.NewPath("ncclIBHCA"), c.NCCLIBHCA, modes))
	}
	if v := c.NCCLCrossNIC; v != nil && (*v < 0 || *v > 2) {
		errs = append(errs, field.Invalid(field.NewPath("ncclCrossNIC"), *v, "must be 0 (isolated rails), 1 or 2"))
	}
	if p := c.NCCLProfile; p != "" && !contains(containerdev.ProfileNames(), p) {
		errs = append(errs, field.NotSupported(field.NewPath("ncclProfile"), p, containerdev.ProfileNames()))
	}
	if f := c.NCCLIBAddrFamily; f != "" && !contains(containerdev.AddrFamilies, f) {
		errs = append(errs, field.NotSupported(field.NewPath("ncclIBAddrFamily"), f, containerdev.AddrFamilies))
	}
	if s := c.NCCLSocketIfname; s != nil && strings.ContainsAny(*s, " \t\n\x00") {
		errs = append(errs, field.Invalid(field.NewPath("ncclSocketIfname"), *s, "must be an NCCL interface list (\"=eth0\", \"^docker,lo\"), without white space"))
	}
	if c.CDISpecDir != "" {
		if !strings.HasPrefix(c.CDISpecDir, "/") {
			errs = append(errs, field.Invalid(field.NewPath("cdiSpecDir"), c.CDISpecDir, "must be an absolute path"))
		}
		if c.NCCLIBHCA != NCCLIBHCAMerged && !anySandbox(c) && !anyDRA(c) {
			errs = append(errs, field.Invalid(field.NewPath("cdiSpecDir"), c.CDISpecDir, "is used only with ncclIBHCA: merged, a pool with binding: sandbox or a pool with delivery: dra"))
		}
	}
	return errs
}

func anySandbox(c *AgentConfig) bool {
	for _, p := range c.Pools {
		if p.Binding == BindingSandbox {
			return true
		}
	}
	return false
}

func anyDRA(c *AgentConfig) bool {
	for _, p := range c.Pools {
		if p.Delivery == DeliveryDRA {
			return true
		}
	}
	return false
}

// validateBinding checks a pool's binding mode against the pool and the
// configuration.
func validateBinding(path *field.Path, c *AgentConfig, p *Pool) field.ErrorList {
	modes := []string{BindingAllocate, BindingSandbox}
	if !contains(modes, p.Binding) {
		return field.ErrorList{field.NotSupported(path.Child("binding"), p.Binding, modes)}
	}
	if p.Binding != BindingSandbox {
		return nil
	}
	var errs field.ErrorList
	if p.DeviceKind == KindShared {
		errs = append(errs, field.Invalid(path.Child("binding"), p.Binding, "a shared pool's shares each name their NIC: only vf and pf pools bind late"))
	}
	if c.CDISpecDir == "" {
		errs = append(errs, field.Invalid(path.Child("binding"), p.Binding, "the bound device reaches the container through CDI: set cdiSpecDir (containerd >= 1.7 or CRI-O)"))
	}
	if p.CDIKind != "" {
		errs = append(errs, field.Invalid(path.Child("cdiKind"), p.CDIKind, "a sandbox pool's containers get the CDI devices railyard.io/binding=<token>: leave cdiKind unset"))
	}
	return errs
}

// draServed says whether the agent serves pools with delivery "dra": it
// does, through its DRA kubelet plugin (internal/draplugin). Were it
// false, a dra pool would be refused rather than fall back to the device
// plugin unnoticed.
const draServed = true

// validateDelivery checks a pool's delivery mode: one of the two (never
// both), and for DRA what the DRA driver cannot do (shares of a NIC, late
// binding tokens, extra CDI names: a DRA claim's devices always reach the
// container through the driver's own CDI devices).
func validateDelivery(path *field.Path, c *AgentConfig, p *Pool) field.ErrorList {
	modes := []string{DeliveryDevicePlugin, DeliveryDRA}
	if !contains(modes, p.Delivery) {
		return field.ErrorList{field.NotSupported(path.Child("delivery"), p.Delivery, modes)}
	}
	if p.Delivery != DeliveryDRA {
		return nil
	}
	var errs field.ErrorList
	if !draServed {
		errs = append(errs, field.Invalid(path.Child("delivery"), p.Delivery, "the agent's DRA kubelet plugin is not built yet (docs/dra.md): serve the pool with devicePlugin"))
	}
	if c.CDISpecDir == "" {
		errs = append(errs, field.Invalid(path.Child("delivery"), p.Delivery, "a DRA claim's devices reach the container through CDI: set cdiSpecDir (/var/run/cdi; containerd >= 1.7 or CRI-O)"))
	}
	if p.Binding == BindingSandbox {
		errs = append(errs, field.Invalid(path.Child("binding"), p.Binding, "the scheduler binds a DRA pool's devices with the pod's GPUs: late binding is for devicePlugin pools"))
	}
	if p.CDIKind != "" {
		errs = append(errs, field.Invalid(path.Child("cdiKind"), p.CDIKind, "a DRA pool's devices always reach the container as the driver's CDI devices: leave cdiKind unset"))
	}
	return errs
}

// validateShared checks what only a shared pool may have, and what it
// may not: its limit, and selectors that name VFs.
func validateShared(path *field.Path, p *Pool) field.ErrorList {
	var errs field.ErrorList
	if p.DeviceKind != KindShared {
		if p.SharedLimit != nil {
			errs = append(errs, field.Invalid(path.Child("sharedLimit"), *p.SharedLimit, "only a pool of deviceKind shared has a sharedLimit"))
		}
		return errs
	}
	if p.SharedLimit != nil && (*p.SharedLimit < 1 || *p.SharedLimit > MaxSharedLimit) {
		errs = append(errs, field.Invalid(path.Child("sharedLimit"), *p.SharedLimit, fmt.Sprintf("must be 1-%d (pods per NIC)", MaxSharedLimit)))
	}
	for i, v := range p.Selectors.PFNames {
		if pf, err := ParsePFName(v); err == nil && len(pf.Ranges) > 0 {
			errs = append(errs, field.Invalid(path.Child("selectors", "pfNames").Index(i), v, "a shared pool hands out whole NICs: give the PF name without a VF index range"))
		}
	}
	if p.Selectors.RDMACapable != nil && !*p.Selectors.RDMACapable {
		errs = append(errs, field.Invalid(path.Child("selectors", "rdmaCapable"), false, "a shared pool hands out verbs devices: it cannot select NICs without RDMA"))
	}
	return errs
}

func validatePool(path *field.Path, p *Pool) field.ErrorList {
	errs := validateResourceName(path.Child("name"), p.Name)
	kinds := []string{KindVF, KindPF, KindShared}
	if !contains(kinds, p.DeviceKind) {
		errs = append(errs, field.NotSupported(path.Child("deviceKind"), p.DeviceKind, kinds))
	}
	errs = append(errs, validateShared(path, p)...)
	policies := []string{PolicySpread, PolicyGPUAware, PolicyPacked}
	if !contains(policies, p.Policy) {
		errs = append(errs, field.NotSupported(path.Child("policy"), p.Policy, policies))
	}
	if p.CDIKind != "" {
		vendor, class, ok := strings.Cut(p.CDIKind, "/")
		if !ok || len(validation.IsDNS1123Subdomain(vendor)) > 0 || len(validation.IsQualifiedName(class)) > 0 || strings.Contains(class, "/") {
			errs = append(errs, field.Invalid(path.Child("cdiKind"), p.CDIKind, "must be <vendor domain>/<class>, e.g. railyard.io/rdma"))
		}
	}
	s := path.Child("selectors")
	for i, v := range p.Selectors.Vendors {
		if !hexID.MatchString(v) {
			errs = append(errs, field.Invalid(s.Child("vendors").Index(i), v, "must be a 4-digit hex PCI vendor ID such as 15b3"))
		}
	}
	for i, v := range p.Selectors.Devices {
		if !hexID.MatchString(v) {
			errs = append(errs, field.Invalid(s.Child("devices").Index(i), v, "must be a 4-digit hex PCI device ID such as 101e"))
		}
	}
	for i, v := range p.Selectors.Drivers {
		if v == "" || strings.ContainsAny(v, "/ \t\n") {
			errs = append(errs, field.Invalid(s.Child("drivers").Index(i), v, "must be a kernel driver name"))
		}
	}
	for i, v := range p.Selectors.PFNames {
		if _, err := ParsePFName(v); err != nil {
			errs = append(errs, field.Invalid(s.Child("pfNames").Index(i), v, err.Error()))
		}
	}
	for i, v := range p.Selectors.PCIAddresses {
		if _, err := pciaddr.Parse(v); err != nil {
			var pe *pciaddr.Error
			errors.As(err, &pe) // Parse's errors are *pciaddr.Error
			errs = append(errs, field.Invalid(s.Child("pciAddresses").Index(i), v, "must be a PCI address ("+pe.Reason+")"))
		}
	}
	layers := []string{LinkLayerInfiniBand, LinkLayerEthernet}
	for i, v := range p.Selectors.LinkLayers {
		if !contains(layers, v) {
			errs = append(errs, field.NotSupported(s.Child("linkLayers").Index(i), v, layers))
		}
	}
	for i, v := range p.Selectors.NUMANodes {
		if v < 0 || v > 1023 {
			errs = append(errs, field.Invalid(s.Child("numaNodes").Index(i), v, "must be 0-1023"))
		}
	}
	return errs
}

// validateResourceName checks an extended resource name by the rules
// kubelet applies when a device plugin registers (v1helper's
// IsExtendedResourceName): "<domain>/<name>"; not a native resource (no
// "kubernetes.io/" in it); not starting with "requests." (the quota
// prefix); and "requests." + name must still be a qualified name, so the
// domain has room for that prefix.
func validateResourceName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "a resource name such as railyard.io/rdma_vf_a")}
	}
	domain, short, ok := strings.Cut(name, "/")
	if !ok || domain == "" || short == "" {
		return field.ErrorList{field.Invalid(path, name, "must be <domain>/<name>")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if strings.Contains(name, "kubernetes.io/") {
		errs = append(errs, field.Invalid(path, name, "the kubernetes.io domain is reserved for native resources"))
	}
	if strings.HasPrefix(name, quotaPrefix) {
		errs = append(errs, field.Invalid(path, name, "must not start with \"requests.\" (kubelet reserves it for quota)"))
	} else if len(errs) == 0 {
		for _, msg := range validation.IsQualifiedName(quotaPrefix + name) {
			errs = append(errs, field.Invalid(path, name, "kubelet checks \"requests.\"+name: "+msg))
		}
	}
	return errs
}

// quotaPrefix is kubelet's DefaultResourceRequestsPrefix.
const quotaPrefix = "requests."

// FormatErrors renders an error list one error per line, for start-up
// failures.
func FormatErrors(errs field.ErrorList) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  - " + e.Error()
	}
	return strings.Join(lines, "\n")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func validateErrorCounters(ec *ErrorCounters) field.ErrorList {
	if ec == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("errorCounters")
	if d := ec.Window; d != nil && d.Duration != 0 && (d.Duration < MinErrorCounterWindow || d.Duration > MaxErrorCounterWindow) {
		errs = append(errs, field.Invalid(p.Child("window"), d.Duration.String(),
			fmt.Sprintf("must be %s to %s, or 0s to turn the counters' health off", MinErrorCounterWindow, MaxErrorCounterWindow)))
	}
	if n := ec.LinkErrors; n != nil && *n < 1 {
		errs = append(errs, field.Invalid(p.Child("linkErrors"), *n, "must be at least 1"))
	}
	if d := ec.Hold; d != nil && (d.Duration < 0 || d.Duration > MaxDegradedHold) {
		errs = append(errs, field.Invalid(p.Child("hold"), d.Duration.String(), fmt.Sprintf("must be 0s to %s", MaxDegradedHold)))
	}
	return errs
}
