package config

import (
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/railyard-io/railyard/internal/binding"
	"github.com/railyard-io/railyard/internal/deviceid"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/pciaddr"
	"github.com/railyard-io/railyard/internal/strictjson"
)

// NormalizePCIAddress returns a deviceID's PCI address in canonical form
// (pciaddr's rules: either case, a domain of 4 to 8 digits, or the short
// "BB:DD.F" form for domain 0000; white space around it ignored); ok is
// false when it is not one.
func NormalizePCIAddress(s string) (string, bool) {
	a, err := pciaddr.ParseOptionalDomain(strings.TrimSpace(s))
	if err != nil {
		return "", false
	}
	return a.String(), true
}

// samePCIAddress reports whether device IDs a and b name the same device.
func samePCIAddress(a, b string) bool {
	na, okA := NormalizePCIAddress(a)
	nb, okB := NormalizePCIAddress(b)
	if okA && okB {
		return na == nb
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// ValidIfName reports why name cannot be a Linux interface name, or nil.
func ValidIfName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("must not be empty")
	case len(name) > 15:
		return fmt.Errorf("%q is longer than 15 bytes", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid interface name", name)
	case strings.ContainsAny(name, "/: \t\n\x00"):
		return fmt.Errorf("%q contains '/', ':', white space or NUL", name)
	}
	return nil
}

// problems collects the FieldErrors of one check.
type problems []FieldError

// bad records that field is invalid (CodeInvalid).
func (p *problems) bad(field, format string, args ...any) {
	*p = append(*p, FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Code: CodeInvalid})
}

// apply defaults and validates the decoded document into c, one group of
// fields after the other (each apply* owns its fields), and returns every
// problem found.
func (r *raw) apply(c *Config, needDevice bool, o options) []FieldError {
	var errs problems
	errs = append(errs, r.applyIdentity(c)...)
	rc, rcErrs := r.runtimeConfig()
	errs = append(errs, rcErrs...)
	cniArgs, argsErr := parseArgs(r.Args)
	if argsErr != "" {
		errs.bad("args", "%s", argsErr)
	}
	errs = append(errs, r.applyDevice(c, rc, needDevice)...)
	errs = append(errs, r.applyBinding(c)...)
	errs = append(errs, r.applyIPAM(c)...)
	if r.DNS != nil {
		c.DNS = *r.DNS
	}
	errs = append(errs, r.applyLink(c, rc)...)
	errs = append(errs, r.applyVF(c)...)
	errs = append(errs, r.applyRDMA(c)...)
	errs = append(errs, r.applyIB(c, rc, cniArgs)...)
	errs = append(errs, r.applyShare(c)...)
	errs = append(errs, r.applyLog(c)...)
	errs = append(errs, r.applyDeviceInfo(c, rc)...)
	errs = append(errs, r.applyPaths(c, o)...)
	errs = append(errs, r.applyLockTimeout(c)...)
	errs = append(errs, r.applyGC(c)...)
	return errs
}

// applyIdentity reads cniVersion, name and type, each required.
func (r *raw) applyIdentity(c *Config) problems {
	var errs problems
	c.CNIVersion, c.Name, c.Type = r.CNIVersion, r.Name, r.Type
	for _, f := range []struct{ name, v string }{{"cniVersion", r.CNIVersion}, {"name", r.Name}, {"type", r.Type}} {
		if f.v == "" {
			errs.bad(f.name, "is required")
		}
	}
	return errs
}

// runtimeConfig decodes the runtime-supplied keys railyard-cni uses.
func (r *raw) runtimeConfig() (runtimeConfig, problems) {
	var rc runtimeConfig
	var errs problems
	if len(r.RuntimeConfig) > 0 && string(r.RuntimeConfig) != "null" {
		// The runtime's keys beside ours (portMappings, ips, ...) are
		// the runtime's: unknown keys are dropped, not refused.
		if err := strictjson.Unmarshal(r.RuntimeConfig, &rc, strictjson.AllowUnknownFields); err != nil {
			errs.bad("runtimeConfig", "must be an object with string deviceID, mac, infinibandGUID and CNIDeviceInfoFile: %v", err)
		}
	}
	return rc, errs
}

// applyDevice reads the device: a PCI address, a share of a shared NIC or
// a late-binding token (runtimeConfig.deviceID, deviceID or pciBusID), a
// netdev name (device), or none with resourceName.
func (r *raw) applyDevice(c *Config, rc runtimeConfig, needDevice bool) problems {
	var errs problems
	// Multus puts the allocated device's PCI address in both deviceID
	// and pciBusID (pkg/types/conf.go, delegateAddDeviceID).
	devID, devIDField := r.DeviceID, "deviceID"
	if r.PCIBusID != nil && *r.PCIBusID != "" {
		if devID == nil || *devID == "" {
			devID, devIDField = r.PCIBusID, "pciBusID"
		} else if !samePCIAddress(*devID, *r.PCIBusID) {
			errs.bad("pciBusID", "%q differs from deviceID %q (Multus sets both to the allocated device)", *r.PCIBusID, *devID)
		}
	}
	if rc.DeviceID != nil && *rc.DeviceID != "" {
		devID, devIDField = rc.DeviceID, "runtimeConfig.deviceID"
	}
	switch {
	case devID != nil && *devID != "" && r.Device != nil:
		errs.bad("device", "set only one of %s and device", devIDField)
	case devID != nil && *devID != "":
		errs = append(errs, applyDeviceID(c, *devID, devIDField)...)
	case r.Device != nil:
		if err := ValidIfName(*r.Device); err != nil {
			errs.bad("device", "%v", err)
		}
		c.Device = *r.Device
	case r.ResourceName != nil && *r.ResourceName != "":
		// Late binding without Multus: the pod's tokens of this pool.
	case needDevice:
		errs.bad("deviceID", "one of deviceID, runtimeConfig.deviceID, device or resourceName is required")
	}
	return errs
}

// applyDeviceID reads a device ID: a PCI address, a late-binding token or
// a share of a PCI address.
func applyDeviceID(c *Config, devID, field string) problems {
	var errs problems
	if a, ok := NormalizePCIAddress(devID); ok {
		c.DeviceID = a
	} else if tok := strings.TrimSpace(devID); binding.IsToken(tok) {
		c.Token = tok
	} else if pci, k, err := deviceid.ParseShare(strings.TrimSpace(devID)); err == nil {
		if a, ok := NormalizePCIAddress(pci); ok {
			c.DeviceID, c.Share = a, deviceid.Share(a, k)
		} else {
			errs.bad(field, "%q is not a share of a PCI address", devID)
		}
	} else {
		errs.bad(field, "%q is not a PCI address (want DDDD:BB:DD.F, DDDD:BB:DD.F-sN for a share of a shared NIC, or a late-binding token tok-<tag>-n<NUMA>-<k>)", devID)
	}
	return errs
}

// applyIPAM reads ipam.type, the plugin to delegate addresses to.
func (r *raw) applyIPAM(c *Config) problems {
	var errs problems
	if len(r.IPAM) == 0 || string(r.IPAM) == "null" {
		return nil
	}
	var ipam struct {
		Type *string `json:"type"`
	}
	// The IPAM plugin's keys are its own: only "type" is ours.
	if err := strictjson.Unmarshal(r.IPAM, &ipam, strictjson.AllowUnknownFields); err != nil {
		errs.bad("ipam", "must be an object with a string \"type\"")
	} else if ipam.Type == nil || *ipam.Type == "" {
		errs.bad("ipam.type", "is required when ipam is set")
	} else if strings.ContainsAny(*ipam.Type, "/\x00") || *ipam.Type == "." || *ipam.Type == ".." {
		errs.bad("ipam.type", "%q is not a plugin name", *ipam.Type)
	} else {
		c.IPAMType = *ipam.Type
	}
	return errs
}

// applyLink reads the pod interface's mtu and mac (runtimeConfig.mac
// first).
func (r *raw) applyLink(c *Config, rc runtimeConfig) problems {
	var errs problems
	if r.MTU != nil {
		if *r.MTU < 68 || *r.MTU > 65535 {
			errs.bad("mtu", "%d is outside 68..65535", *r.MTU)
		} else {
			c.MTU = *r.MTU
		}
	}
	mac, macField := r.MAC, "mac"
	if rc.MAC != nil && *rc.MAC != "" {
		mac, macField = rc.MAC, "runtimeConfig.mac"
	}
	if mac == nil {
		return errs
	}
	hw, err := net.ParseMAC(*mac)
	switch {
	case err != nil:
		errs.bad(macField, "%q is not a MAC address", *mac)
	case len(hw) != 6:
		errs.bad(macField, "%q is not a 6-byte Ethernet address", *mac)
	case hw[0]&1 == 1:
		errs.bad(macField, "%q is a multicast address", *mac)
	case isZero(hw):
		errs.bad(macField, "%q is the zero address", *mac)
	default:
		c.MAC = hw
	}
	return errs
}

// applyRDMA reads rdma (or ib-sriov-cni's rdmaIsolation) and multiRail.
func (r *raw) applyRDMA(c *Config) problems {
	var errs problems
	switch {
	case r.RDMA != nil && r.RDMAIsolation != nil && *r.RDMA != *r.RDMAIsolation:
		errs.bad("rdmaIsolation", "%v contradicts rdma %v (rdmaIsolation is ib-sriov-cni's name for rdma)", *r.RDMAIsolation, *r.RDMA)
	case r.RDMA != nil:
		c.RDMA = *r.RDMA
	case r.RDMAIsolation != nil:
		c.RDMA = *r.RDMAIsolation
	}
	c.MultiRail = r.MultiRail == nil || *r.MultiRail
	return errs
}

// applyDeviceInfo reads CNIDeviceInfoFile (runtimeConfig's first). It is
// kept as given: railyard-cni checks it is the file Multus names for the
// attachment (internal/cni).
func (r *raw) applyDeviceInfo(c *Config, rc runtimeConfig) problems {
	var errs problems
	info, infoField := r.CNIDeviceInfoFile, "CNIDeviceInfoFile"
	if rc.CNIDeviceInfoFile != nil && *rc.CNIDeviceInfoFile != "" {
		info, infoField = rc.CNIDeviceInfoFile, "runtimeConfig.CNIDeviceInfoFile"
	}
	if info == nil || *info == "" {
		return nil
	}
	if !filepath.IsAbs(*info) {
		errs.bad(infoField, "%q must be an absolute path", *info)
	} else {
		c.DeviceInfoFile = *info
	}
	return errs
}

// applyLockTimeout reads lockTimeout, how long ADD and DEL wait for a
// device's lock.
func (r *raw) applyLockTimeout(c *Config) problems {
	var errs problems
	c.LockTimeout = DefaultLockTimeout
	if r.LockTimeout == nil {
		return nil
	}
	d, err := time.ParseDuration(*r.LockTimeout)
	switch {
	case err != nil:
		errs.bad("lockTimeout", "%q is not a duration such as \"10s\"", *r.LockTimeout)
	case d < 0 || d > MaxLockTimeout:
		errs.bad("lockTimeout", "%s is outside 0..%s", d, MaxLockTimeout)
	default:
		c.LockTimeout = d
	}
	return errs
}

// applyGC reads prevResult and the attachments GC keeps.
func (r *raw) applyGC(c *Config) problems {
	var errs problems
	if len(r.PrevResult) > 0 && string(r.PrevResult) != "null" {
		c.RawPrevResult = r.PrevResult
	}
	// libcni sends the GC list under both names (the spec's first text
	// used the second); either names the attachments to keep.
	attachments, attField := r.ValidAttachments, "cni.dev/valid-attachments"
	if attachments == nil && r.Attachments != nil {
		attachments, attField = r.Attachments, "cni.dev/attachments"
	}
	for i, a := range attachments {
		if a.ContainerID == "" || a.IfName == "" {
			errs.bad(fmt.Sprintf("%s[%d]", attField, i), "needs containerID and ifname")
		}
	}
	c.ValidAttachments = attachments
	return errs
}

func (r *raw) applyVF(c *Config) []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Code: CodeInvalid})
	}
	if r.VLAN != nil {
		if *r.VLAN < 0 || *r.VLAN > 4094 {
			bad("vlan", "%d is outside 0..4094", *r.VLAN)
		} else {
			c.VF.VLAN = r.VLAN
		}
	}
	if r.VLANQoS != nil {
		switch {
		case *r.VLANQoS < 0 || *r.VLANQoS > 7:
			bad("vlanQoS", "%d is outside 0..7", *r.VLANQoS)
		case *r.VLANQoS != 0 && (r.VLAN == nil || *r.VLAN == 0):
			bad("vlanQoS", "needs a non-zero vlan")
		default:
			c.VF.VLANQoS = r.VLANQoS
		}
	}
	if r.VLANProto != nil {
		p, ok := vlanProtos[strings.ToLower(*r.VLANProto)]
		switch {
		case !ok:
			bad("vlanProto", "%q must be \"802.1Q\" or \"802.1ad\"", *r.VLANProto)
		case r.VLAN == nil:
			bad("vlanProto", "needs vlan")
		case p == netops.VLANProto8021AD && *r.VLAN == 0:
			bad("vlanProto", "802.1ad needs a non-zero vlan")
		default:
			c.VF.VLANProto = &p
		}
	}
	onOff := func(field string, v *string) Tri {
		if v == nil {
			return Unset
		}
		switch *v {
		case "on":
			return On
		case "off":
			return Off
		}
		bad(field, "%q must be \"on\" or \"off\"", *v)
		return Unset
	}
	c.VF.SpoofChk = onOff("spoofchk", r.SpoofChk)
	c.VF.Trust = onOff("trust", r.Trust)
	if r.LinkState != nil {
		states := map[string]uint32{"auto": 0, "enable": 1, "disable": 2}
		if s, ok := states[*r.LinkState]; ok {
			c.VF.LinkState = &s
		} else {
			bad("link_state", "%q must be \"auto\", \"enable\" or \"disable\"", *r.LinkState)
		}
	}
	rate := func(field string, v *int) *int {
		if v == nil {
			return nil
		}
		if *v < 0 || *v > 10_000_000 {
			bad(field, "%d Mbit/s is outside 0..10000000", *v)
			return nil
		}
		return v
	}
	c.VF.MinTxRate = rate("min_tx_rate", r.MinTxRate)
	c.VF.MaxTxRate = rate("max_tx_rate", r.MaxTxRate)
	if c.VF.MinTxRate != nil && c.VF.MaxTxRate != nil && *c.VF.MaxTxRate != 0 && *c.VF.MinTxRate > *c.VF.MaxTxRate {
		bad("min_tx_rate", "%d exceeds max_tx_rate %d", *c.VF.MinTxRate, *c.VF.MaxTxRate)
	}
	return errs
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// jsonFields lists the JSON names of a struct's fields.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		if name := jsonName(t.Field(i)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// jsonName is the JSON key of a struct field ("" for none).
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}
