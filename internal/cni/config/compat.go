package config

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// The fields in this file come from sriov-cni and ib-sriov-cni, so that
// their network configurations work unchanged (docs/cni.md maps each one).

// vlanProtos are sriov-cni's vlanProto values, matched without case.
var vlanProtos = map[string]int{"802.1q": netops.VLANProto8021Q, "802.1ad": netops.VLANProto8021AD}

// ibKubernetesArg is the args.cni key ib-kubernetes sets once it has
// configured the pod's GUID (and pkey) in the subnet manager, and
// ibKubernetesConfigured its value then (ib-sriov-cni checks the same).
const (
	ibKubernetesArg        = "mellanox.infiniband.app"
	ibKubernetesConfigured = "configured"
)

// Log levels railyard-cni accepts: sriov-cni's names.
var logLevels = map[string]bool{"panic": true, "error": true, "warning": true, "info": true, "debug": true}

// parseArgs reads the string values of args.cni (Multus puts a network
// selection's cni-args there); other value types are ignored, as the
// runtime owns args. It returns a message when args is not an object.
func parseArgs(rawArgs json.RawMessage) (map[string]string, string) {
	if len(rawArgs) == 0 || string(rawArgs) == "null" {
		return nil, ""
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(rawArgs, &args); err != nil {
		return nil, "must be an object"
	}
	var cni map[string]json.RawMessage
	if err := json.Unmarshal(args["cni"], &cni); err != nil || cni == nil {
		return nil, ""
	}
	out := map[string]string{}
	for k, v := range cni {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		}
	}
	return out, ""
}

// ParseGUID parses an InfiniBand GUID, as ip-link writes it
// ("02:00:00:00:00:00:00:01") or as sysfs does ("0200:0000:0000:0001"),
// refusing the all-zero and all-ones GUIDs no port may have.
func ParseGUID(s string) (net.HardwareAddr, error) {
	g, err := sysfs.ParseGUID(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a GUID (want 8 colon-separated hex bytes)", s)
	}
	out := net.HardwareAddr(g[:])
	if isZero(out) || isAllOnes(out) {
		return nil, fmt.Errorf("%q is not a usable GUID (all zeros or all ones)", s)
	}
	return out, nil
}

func isAllOnes(b []byte) bool {
	for _, x := range b {
		if x != 0xff {
			return false
		}
	}
	return true
}

// applyIB reads ib-sriov-cni's fields: the VF GUID (runtimeConfig's
// infinibandGUID capability first, then args.cni.guid, as ib-sriov-cni
// takes them), pkey, ibKubernetesEnabled and vfioPciMode.
func (r *raw) applyIB(c *Config, rc runtimeConfig, cniArgs map[string]string) []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Code: CodeInvalid})
	}
	guid, guidField := cniArgs["guid"], "args.cni.guid"
	if rc.InfinibandGUID != nil && *rc.InfinibandGUID != "" {
		guid, guidField = *rc.InfinibandGUID, "runtimeConfig.infinibandGUID"
	}
	if guid != "" {
		if g, err := ParseGUID(guid); err != nil {
			bad(guidField, "%v", err)
		} else {
			c.VF.GUID = g
		}
	}
	if r.PKey != nil && *r.PKey != "" {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(*r.PKey), "0x"), 16, 16)
		if err != nil || v&0x7fff == 0 {
			bad("pkey", "%q is not a partition key (want hex 0x0001..0xffff, e.g. \"0x7fff\")", *r.PKey)
		} else {
			c.PKey = fmt.Sprintf("0x%04x", v)
		}
	}
	if r.IBKubernetes != nil {
		c.IBKubernetes = *r.IBKubernetes
		c.IBKubernetesState = cniArgs[ibKubernetesArg]
	}
	if r.VFIOPCIMode != nil && *r.VFIOPCIMode {
		bad("vfioPciMode", "railyard-cni attaches a kernel network interface and RDMA device; a function bound to vfio-pci has neither. Hand vfio-pci VFs to the pod through a device plugin pool and leave them out of the network attachment")
	}
	return errs
}

// applyLog reads sriov-cni's logLevel (logFile is a path field: paths.go).
func (r *raw) applyLog(c *Config) []FieldError {
	var errs []FieldError
	if r.LogLevel != nil && *r.LogLevel != "" {
		if l := strings.ToLower(*r.LogLevel); logLevels[l] {
			c.LogLevel = l
		} else {
			errs = append(errs, FieldError{Field: "logLevel", Msg: fmt.Sprintf("%q must be panic, error, warning, info or debug", *r.LogLevel), Code: CodeInvalid})
		}
	}
	return errs
}

// applyShare reads the settings of a share of a shared NIC (what
// k8s-rdma-shared-dev-plugin users pair with the macvlan plugin).
func (r *raw) applyShare(c *Config) []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Code: CodeInvalid})
	}
	c.MacvlanMode = "bridge"
	if r.MacvlanMode != nil {
		if slices.Contains(netops.MacvlanModes, *r.MacvlanMode) {
			c.MacvlanMode = *r.MacvlanMode
		} else {
			bad("macvlanMode", "%q must be one of %s", *r.MacvlanMode, strings.Join(netops.MacvlanModes, ", "))
		}
	}
	if c.Share != "" && c.RDMA {
		bad("rdma", "%s is a share of a shared NIC: its RDMA device stays in the host namespace for every pod sharing it (the RDMA subsystem in shared netns mode); remove rdma/rdmaIsolation", c.Share)
	}
	return errs
}
