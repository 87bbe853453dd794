package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/railyard-io/railyard/internal/strictjson"
)

// Defaults.
const (
	DefaultStateDir   = "/var/lib/cni/railyard"
	DefaultBindingDir = "/var/lib/railyard/binding"
	// DefaultPodResourcesSocket is kubelet's PodResources socket.
	DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"
	DefaultSysfsRoot          = "/sys"
	DefaultLockTimeout        = 10 * time.Second
	MaxLockTimeout            = 5 * time.Minute
)

// Tri is an optional on/off setting.
type Tri int

// Tri values.
const (
	Unset Tri = iota
	On
	Off
)

// VF holds the settings applied to a virtual function through its PF. A nil
// pointer field leaves that setting as it is.
type VF struct {
	VLAN    *int
	VLANQoS *int
	// VLANProto is netops.VLANProto8021Q or VLANProto8021AD; nil leaves
	// the protocol as it is.
	VLANProto *int
	SpoofChk  Tri
	Trust     Tri
	LinkState *uint32
	MinTxRate *int
	MaxTxRate *int
	// GUID is an InfiniBand VF's node and port GUID (8 bytes); nil leaves
	// it as it is.
	GUID net.HardwareAddr
}

// Any reports whether any VF setting is requested.
func (v VF) Any() bool {
	return v.VLAN != nil || v.VLANQoS != nil || v.VLANProto != nil || v.SpoofChk != Unset || v.Trust != Unset ||
		v.LinkState != nil || v.MinTxRate != nil || v.MaxTxRate != nil || v.GUID != nil
}

// Config is a parsed, defaulted and validated network configuration.
type Config struct {
	CNIVersion string
	Name       string
	Type       string
	// DeviceID is the PCI address of the device ("0000:03:00.2"), from
	// runtimeConfig.deviceID or deviceID; empty when Device is set.
	DeviceID string
	// Share is the device ID of a share of a shared NIC ("0000:3b:00.0-s2",
	// from a shared pool); DeviceID is then the NIC's PCI address, and ADD
	// gives the pod a macvlan on the NIC's netdev instead of the netdev.
	Share string
	// Token is a late-binding token ("tok-5c0e1f2a-n0-3", from a pool
	// with binding: sandbox; Multus passes it as deviceID): ADD binds the
	// pod's tokens and attaches the device bound to this one. DeviceID is
	// then set by ADD, not by the parser.
	Token string
	// ResourceName, without any deviceID (no Multus), names the sandbox
	// pool whose bound device ADD attaches: the pod's tokens come from
	// kubelet's PodResources.
	ResourceName string
	// BindingDir is the binding store railyard-agent publishes (default
	// /var/lib/railyard/binding).
	BindingDir string
	// PodResourcesSocket is kubelet's PodResources socket, read for
	// resourceName of a pool without late binding when the agent's view
	// names none (default /var/lib/kubelet/pod-resources/kubelet.sock).
	PodResourcesSocket string
	// MacvlanMode is the macvlan mode for a share (default "bridge").
	MacvlanMode string
	// Device is the host netdev name; empty when DeviceID is set.
	Device string
	// IPAMType is the IPAM plugin to delegate to ("" for none).
	IPAMType string
	MTU      int
	MAC      net.HardwareAddr
	VF       VF
	RDMA     bool
	// MultiRail gives the pod's interface its own ARP behaviour
	// (arp_ignore 1, arp_announce 2, rp_filter 2) and source routing (a
	// routing table of its own, and a rule sending what leaves from its
	// addresses there), so that with several rails in a pod the traffic
	// of a rail's address leaves through that rail ("multiRail", default
	// true: harmless with one rail).
	MultiRail bool
	DNS       types.DNS
	// PKey is ib-sriov-cni's "pkey": kept for ib-kubernetes, which reads
	// it from the network attachment; railyard-cni programs no pkey.
	PKey string
	// IBKubernetes is ib-sriov-cni's "ibKubernetesEnabled": ADD then needs
	// ib-kubernetes' "configured" mark in args.cni and, for a VF, a GUID.
	IBKubernetes bool
	// IBKubernetesState is args.cni["mellanox.infiniband.app"].
	IBKubernetesState string
	// LogLevel and LogFile are sriov-cni's logging settings: where and how
	// much railyard-cni logs ("" and "" log nothing).
	LogLevel string
	LogFile  string
	// DeviceInfoFile is where to write the device-info-spec file ("").
	DeviceInfoFile string
	StateDir       string
	// SysfsRoot is a test and debug knob: the directory standing for /sys.
	SysfsRoot        string
	LockTimeout      time.Duration
	RawPrevResult    json.RawMessage
	ValidAttachments []types.GCAttachment
	// Raw is the configuration as received, passed on to IPAM.
	Raw []byte
}

// Error codes used for configuration problems (CNI spec error codes).
const (
	CodeUnsupportedField = types.ErrUnsupportedField
	CodeDecoding         = types.ErrDecodingFailure
	CodeInvalid          = types.ErrInvalidNetworkConfig
)

// FieldError is one problem with one field.
type FieldError struct {
	Field string
	Msg   string
	Code  uint
}

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// Error lists every problem found in a configuration.
type Error struct {
	Fields []FieldError
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	return "invalid network configuration: " + strings.Join(msgs, "; ")
}

// Code returns the CNI error code for the error: unsupported field when any
// field is unknown, decoding failure for malformed JSON, else invalid
// network configuration.
func (e *Error) Code() uint {
	code := CodeInvalid
	for _, f := range e.Fields {
		if f.Code == CodeUnsupportedField || f.Code == CodeDecoding {
			return f.Code
		}
	}
	return code
}

// raw mirrors the JSON document. Pointers tell "absent" from "zero".
type raw struct {
	CNIVersion         string               `json:"cniVersion"`
	Name               string               `json:"name"`
	Type               string               `json:"type"`
	Capabilities       map[string]bool      `json:"capabilities"`
	IPAM               json.RawMessage      `json:"ipam"`
	DNS                *types.DNS           `json:"dns"`
	PrevResult         json.RawMessage      `json:"prevResult"`
	ValidAttachments   []types.GCAttachment `json:"cni.dev/valid-attachments"`
	Args               json.RawMessage      `json:"args"`
	RuntimeConfig      json.RawMessage      `json:"runtimeConfig"`
	DeviceID           *string              `json:"deviceID"`
	PCIBusID           *string              `json:"pciBusID"`
	Attachments        []types.GCAttachment `json:"cni.dev/attachments"`
	Device             *string              `json:"device"`
	MTU                *int                 `json:"mtu"`
	MAC                *string              `json:"mac"`
	VLAN               *int                 `json:"vlan"`
	VLANQoS            *int                 `json:"vlanQoS"`
	VLANProto          *string              `json:"vlanProto"`
	SpoofChk           *string              `json:"spoofchk"`
	Trust              *string              `json:"trust"`
	LinkState          *string              `json:"link_state"`
	MinTxRate          *int                 `json:"min_tx_rate"`
	MaxTxRate          *int                 `json:"max_tx_rate"`
	RDMA               *bool                `json:"rdma"`
	RDMAIsolation      *bool                `json:"rdmaIsolation"`
	MacvlanMode        *string              `json:"macvlanMode"`
	PKey               *string              `json:"pkey"`
	IBKubernetes       *bool                `json:"ibKubernetesEnabled"`
	VFIOPCIMode        *bool                `json:"vfioPciMode"`
	LogLevel           *string              `json:"logLevel"`
	LogFile            *string              `json:"logFile"`
	CNIDeviceInfoFile  *string              `json:"CNIDeviceInfoFile"`
	StateDir           *string              `json:"stateDir"`
	SysfsRoot          *string              `json:"sysfsRoot"`
	LockTimeout        *string              `json:"lockTimeout"`
	ResourceName       *string              `json:"resourceName"`
	BindingDir         *string              `json:"bindingDir"`
	PodResourcesSocket *string              `json:"podResourcesSocket"`
	MultiRail          *bool                `json:"multiRail"`
}

// runtimeConfig holds the runtime-supplied keys railyard-cni uses; other
// keys belong to the runtime and are ignored.
type runtimeConfig struct {
	DeviceID          *string `json:"deviceID"`
	MAC               *string `json:"mac"`
	CNIDeviceInfoFile *string `json:"CNIDeviceInfoFile"`
	InfinibandGUID    *string `json:"infinibandGUID"`
}

// knownFields returns the set of top-level keys railyard-cni accepts.
func knownFields() map[string]bool {
	known := map[string]bool{}
	for _, f := range jsonFields(raw{}) {
		known[f] = true
	}
	return known
}

// Parse decodes, defaults and validates the configuration of an ADD or
// CHECK, which must name a device. Its error is an *Error naming every bad
// field.
func Parse(data []byte, opts ...Option) (*Config, error) { return parse(data, true, opts) }

// ParseNetwork is Parse for STATUS and GC, which concern the whole network
// and get no device.
func ParseNetwork(data []byte, opts ...Option) (*Config, error) { return parse(data, false, opts) }

// ParseDel reads what DEL needs and never fails: the CNI spec asks DEL to
// release whatever it can, so a configuration ADD would reject (an unknown
// field, a bad value, even a document that is not JSON) still yields a
// Config. Each field that could not be used keeps its default and is
// reported in the returned problems.
func ParseDel(data []byte, opts ...Option) (*Config, []FieldError) {
	top, problems := decodeTop(data)
	var r raw
	problems = append(problems, decodeFields(top, &r)...)
	c := &Config{Raw: bytes.Clone(data)}
	problems = append(problems, r.apply(c, false, optionsOf(opts))...)
	return c, problems
}

func parse(data []byte, needDevice bool, opts []Option) (*Config, error) {
	top, errs := decodeTop(data)
	if len(errs) > 0 {
		return nil, &Error{Fields: errs}
	}
	known := knownFields()
	var unknown []string
	for k := range top {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, FieldError{Field: k, Msg: fmt.Sprintf("unknown field (value %s)", clip(top[k])), Code: CodeUnsupportedField})
	}
	var r raw
	errs = append(errs, decodeFields(top, &r)...)
	c := &Config{Raw: bytes.Clone(data)}
	errs = append(errs, r.apply(c, needDevice, optionsOf(opts))...)
	if len(errs) > 0 {
		return nil, &Error{Fields: errs}
	}
	return c, nil
}

// decodeTop splits the document into its top-level fields (strictjson:
// one object and nothing after it). A key given twice is an error (the
// last would silently win), reported with the fields, which still hold
// the last value so that DEL can use them.
func decodeTop(data []byte) (map[string]json.RawMessage, []FieldError) {
	var top map[string]json.RawMessage
	err := strictjson.Unmarshal(data, &top)
	var fe *strictjson.FieldError
	if errors.As(err, &fe) && top != nil {
		var errs []FieldError
		for _, k := range fe.Duplicate {
			errs = append(errs, FieldError{Field: k, Msg: "given twice (the last would silently win)", Code: CodeDecoding})
		}
		return top, errs
	}
	if err != nil {
		return nil, []FieldError{{Field: "(document)", Msg: err.Error(), Code: CodeDecoding}}
	}
	if top == nil {
		return nil, []FieldError{{Field: "(document)", Msg: "must be a JSON object", Code: CodeDecoding}}
	}
	return top, nil
}

// runtimeListFields are the fields the runtime fills with its own
// objects (libcni's GC attachments): a newer runtime may add keys there,
// so unknown keys are dropped, not refused.
var runtimeListFields = map[string]bool{"cni.dev/valid-attachments": true, "cni.dev/attachments": true}

// decodeFields decodes each known field of top into r on its own, so one
// field of the wrong type is reported by name and does not hide the others.
func decodeFields(top map[string]json.RawMessage, r *raw) []FieldError {
	var errs []FieldError
	v := reflect.ValueOf(r).Elem()
	t := v.Type()
	for i := range t.NumField() {
		name := jsonName(t.Field(i))
		val, ok := top[name]
		if !ok {
			continue
		}
		var opts []strictjson.Option
		if runtimeListFields[name] {
			opts = append(opts, strictjson.AllowUnknownFields)
		}
		if err := strictjson.Unmarshal(val, v.Field(i).Addr().Interface(), opts...); err != nil {
			errs = append(errs, fieldDecodeError(name, err))
		}
	}
	return errs
}

func fieldDecodeError(field string, err error) FieldError {
	var fe *strictjson.FieldError
	if errors.As(err, &fe) {
		return FieldError{Field: field, Msg: err.Error(), Code: CodeInvalid}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			field += "." + te.Field
		}
		return FieldError{Field: field, Msg: fmt.Sprintf("must be %s, not %s", kindName(te.Type.Kind().String()), te.Value), Code: CodeInvalid}
	}
	return FieldError{Field: field, Msg: err.Error(), Code: CodeInvalid}
}

func kindName(k string) string {
	switch k {
	case "int", "uint32":
		return "an integer"
	case "ptr", "struct", "map":
		return "an object or value of the documented type"
	case "slice":
		return "a list"
	}
	return "a " + k
}

func clip(b json.RawMessage) string {
	s := string(b)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
