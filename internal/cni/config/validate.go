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

func (r *raw) apply(c *Config, needDevice bool) []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Code: CodeInvalid})
	}
	c.CNIVersion, c.Name, c.Type = r.CNIVersion, r.Name, r.Type
	if r.CNIVersion == "" {
		bad("cniVersion", "is required")
	}
	if r.Name == "" {
		bad("name", "is required")
	}
	if r.Type == "" {
		bad("type", "is required")
	}

	var rc runtimeConfig
	if len(r.RuntimeConfig) > 0 && string(r.RuntimeConfig) != "null" {
		// The runtime's keys beside ours (portMappings, ips, ...) are
		// the runtime's: unknown keys are dropped, not refused.
		if err := strictjson.Unmarshal(r.RuntimeConfig, &rc, strictjson.AllowUnknownFields); err != nil {
			bad("runtimeConfig", "must be an object with string deviceID, mac, infinibandGUID and CNIDeviceInfoFile: %v", err)
		}
	}
	cniArgs, argsErr := parseArgs(r.Args)
	if argsErr != "" {
		bad("args", "%s", argsErr)
	}

	// Device. Multus puts the allocated device's PCI address in both
	// deviceID and pciBusID (pkg/types/conf.go, delegateAddDeviceID).
	devID, devIDField := r.DeviceID, "deviceID"
	if r.PCIBusID != nil && *r.PCIBusID != "" {
		if devID == nil || *devID == "" {
			devID, devIDField = r.PCIBusID, "pciBusID"
		} else if !samePCIAddress(*devID, *r.PCIBusID) {
			bad("pciBusID", "%q differs from deviceID %q (Multus sets both to the allocated device)", *r.PCIBusID, *devID)
		}
	}
	if rc.DeviceID != nil && *rc.DeviceID != "" {
		devID, devIDField = rc.DeviceID, "runtimeConfig.deviceID"
	}
	switch {
	case devID != nil && *devID != "" && r.Device != nil:
		bad("device", "set only one of %s and device", devIDField)
	case devID != nil && *devID != "":
		if a, ok := NormalizePCIAddress(*devID); ok {
			c.DeviceID = a
		} else if tok := strings.TrimSpace(*devID); binding.IsToken(tok) {
			c.Token = tok
		} else if pci, k, err := deviceid.ParseShare(strings.TrimSpace(*devID)); err == nil {
			if a, ok := NormalizePCIAddress(pci); ok {
				c.DeviceID, c.Share = a, deviceid.Share(a, k)
			} else {
				bad(devIDField, "%q is not a share of a PCI address", *devID)
			}
		} else {
			bad(devIDField, "%q is not a PCI address (want DDDD:BB:DD.F, DDDD:BB:DD.F-sN for a share of a shared NIC, or a late-binding token tok-<tag>-n<NUMA>-<k>)", *devID)
		}
	case r.Device != nil:
		if err := ValidIfName(*r.Device); err != nil {
			bad("device", "%v", err)
		}
		c.Device = *r.Device
	case r.ResourceName != nil && *r.ResourceName != "":
		// Late binding without Multus: the pod's tokens of this pool.
	case needDevice:
		bad("deviceID", "one of deviceID, runtimeConfig.deviceID, device or resourceName is required")
	}
	errs = append(errs, r.applyBinding(c)...)

	// IPAM.
	if len(r.IPAM) > 0 && string(r.IPAM) != "null" {
		var ipam struct {
			Type *string `json:"type"`
		}
		// The IPAM plugin's keys are its own: only "type" is ours.
		if err := strictjson.Unmarshal(r.IPAM, &ipam, strictjson.AllowUnknownFields); err != nil {
			bad("ipam", "must be an object with a string \"type\"")
		} else if ipam.Type == nil || *ipam.Type == "" {
			bad("ipam.type", "is required when ipam is set")
		} else if strings.ContainsAny(*ipam.Type, "/\x00") || *ipam.Type == "." || *ipam.Type == ".." {
			bad("ipam.type", "%q is not a plugin name", *ipam.Type)
		} else {
			c.IPAMType = *ipam.Type
		}
	}
	if r.DNS != nil {
		c.DNS = *r.DNS
	}

	if r.MTU != nil {
		if *r.MTU < 68 || *r.MTU > 65535 {
			bad("mtu", "%d is outside 68..65535", *r.MTU)
		} else {
			c.MTU = *r.MTU
		}
	}
	mac, macField := r.MAC, "mac"
	if rc.MAC != nil && *rc.MAC != "" {
		mac, macField = rc.MAC, "runtimeConfig.mac"
	}
	if mac != nil {
		hw, err := net.ParseMAC(*mac)
		switch {
		case err != nil:
			bad(macField, "%q is not a MAC address", *mac)
		case len(hw) != 6:
			bad(macField, "%q is not a 6-byte Ethernet address", *mac)
		case hw[0]&1 == 1:
			bad(macField, "%q is a multicast address", *mac)
		case isZero(hw):
			bad(macField, "%q is the zero address", *mac)
		default:
			c.MAC = hw
		}
	}

	errs = append(errs, r.applyVF(c)...)

	switch {
	case r.RDMA != nil && r.RDMAIsolation != nil && *r.RDMA != *r.RDMAIsolation:
		bad("rdmaIsolation", "%v contradicts rdma %v (rdmaIsolation is ib-sriov-cni's name for rdma)", *r.RDMAIsolation, *r.RDMA)
	case r.RDMA != nil:
		c.RDMA = *r.RDMA
	case r.RDMAIsolation != nil:
		c.RDMA = *r.RDMAIsolation
	}
	c.MultiRail = r.MultiRail == nil || *r.MultiRail
	errs = append(errs, r.applyIB(c, rc, cniArgs)...)
	errs = append(errs, r.applyShare(c)...)
	errs = append(errs, r.applyLog(c)...)
	info, infoField := r.CNIDeviceInfoFile, "CNIDeviceInfoFile"
	if rc.CNIDeviceInfoFile != nil && *rc.CNIDeviceInfoFile != "" {
		info, infoField = rc.CNIDeviceInfoFile, "runtimeConfig.CNIDeviceInfoFile"
	}
	if info != nil && *info != "" {
		if !filepath.IsAbs(*info) {
			bad(infoField, "%q must be an absolute path", *info)
		} else {
			c.DeviceInfoFile = *info // as given: railyard-cni checks it is Multus's name
		}
	}
	c.StateDir = DefaultStateDir
	if r.StateDir != nil {
		if !filepath.IsAbs(*r.StateDir) {
			bad("stateDir", "%q must be an absolute path", *r.StateDir)
		} else {
			c.StateDir = filepath.Clean(*r.StateDir)
		}
	}
	c.SysfsRoot = DefaultSysfsRoot
	if r.SysfsRoot != nil {
		if !filepath.IsAbs(*r.SysfsRoot) {
			bad("sysfsRoot", "%q must be an absolute path", *r.SysfsRoot)
		} else {
			c.SysfsRoot = filepath.Clean(*r.SysfsRoot)
		}
	}
	c.LockTimeout = DefaultLockTimeout
	if r.LockTimeout != nil {
		d, err := time.ParseDuration(*r.LockTimeout)
		switch {
		case err != nil:
			bad("lockTimeout", "%q is not a duration such as \"10s\"", *r.LockTimeout)
		case d < 0 || d > MaxLockTimeout:
			bad("lockTimeout", "%s is outside 0..%s", d, MaxLockTimeout)
		default:
			c.LockTimeout = d
		}
	}
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
			bad(fmt.Sprintf("%s[%d]", attField, i), "needs containerID and ifname")
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
