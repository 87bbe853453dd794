package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalid is wrapped by every error about input the SR-IOV network
// device plugin would refuse too.
var ErrInvalid = errors.New("invalid SR-IOV device plugin configuration")

// Device types of the SR-IOV network device plugin.
const (
	dpNetDevice    = "netDevice"
	dpAccelerator  = "accelerator"
	dpAuxNetDevice = "auxNetDevice"
)

// DefaultResourcePrefix is the SR-IOV network device plugin's default
// resource prefix (its --resource-prefix flag).
const DefaultResourcePrefix = "intel.com"

// dpResourceName is the plugin's own check of resourceName
// (utils.ValidResourceName).
var dpResourceName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// dpConfig is config.json as the plugin decodes it (types.ResourceConfList):
// encoding/json, so keys match case-insensitively and unknown keys are
// ignored.
type dpConfig struct {
	ResourceList []dpResource `json:"resourceList"`
	// unknown are, per resource, the keys the plugin ignores.
	unknown [][]string
}

// dpResource is one entry of resourceList (types.ResourceConfig).
type dpResource struct {
	ResourcePrefix  string                       `json:"resourcePrefix"`
	ResourceName    string                       `json:"resourceName"`
	DeviceType      string                       `json:"deviceType"`
	ExcludeTopology bool                         `json:"excludeTopology"`
	Selectors       *json.RawMessage             `json:"selectors"`
	AdditionalInfo  map[string]map[string]string `json:"additionalInfo"`
}

// dpSelector is the union of the plugin's selector objects, which
// selectorObjects fills from the object of the resource's device type.
type dpSelector struct {
	Vendors, Devices, Drivers       []string
	PCIAddresses, ACPIIndexes       []string
	PFNames, RootDevices, LinkTypes []string
	IsRdma, NeedVhostNet            bool
	DDPProfiles, PKeys, AuxTypes    []string
	VdpaType                        string
}

// The plugin's selector objects, per device type, with its JSON names
// (its IsRdma field has no tag: encoding/json matches "isRdma" to it
// case-insensitively, as it does to the tag here). Decoding into the
// device type's own object keeps the plugin's behaviour exactly: a key of
// another type is ignored, whatever its value.
type (
	dpCommon struct {
		Vendors []string `json:"vendors"`
		Devices []string `json:"devices"`
		Drivers []string `json:"drivers"`
	}
	dpGenericNet struct {
		PFNames      []string `json:"pfNames"`
		RootDevices  []string `json:"rootDevices"`
		LinkTypes    []string `json:"linkTypes"`
		IsRdma       bool     `json:"isRdma"`
		ACPIIndexes  []string `json:"acpiIndexes"`
		NeedVhostNet bool     `json:"needVhostNet"`
	}
	dpNetSelector struct {
		dpCommon
		PCIAddresses []string `json:"pciAddresses"`
		dpGenericNet
		DDPProfiles []string `json:"ddpProfiles"`
		VdpaType    string   `json:"vdpaType"`
		PKeys       []string `json:"pKeys"`
	}
	dpAccelSelector struct {
		dpCommon
		PCIAddresses []string `json:"pciAddresses"`
		ACPIIndexes  []string `json:"acpiIndexes"`
	}
	dpAuxSelector struct {
		dpCommon
		dpGenericNet
		AuxTypes []string `json:"auxTypes"`
	}
)

func (s dpNetSelector) selector() dpSelector {
	return dpSelector{Vendors: s.Vendors, Devices: s.Devices, Drivers: s.Drivers, PCIAddresses: s.PCIAddresses,
		ACPIIndexes: s.ACPIIndexes, PFNames: s.PFNames, RootDevices: s.RootDevices, LinkTypes: s.LinkTypes,
		IsRdma: s.IsRdma, NeedVhostNet: s.NeedVhostNet, DDPProfiles: s.DDPProfiles, PKeys: s.PKeys, VdpaType: s.VdpaType}
}

func (s dpAccelSelector) selector() dpSelector {
	return dpSelector{Vendors: s.Vendors, Devices: s.Devices, Drivers: s.Drivers, PCIAddresses: s.PCIAddresses, ACPIIndexes: s.ACPIIndexes}
}

func (s dpAuxSelector) selector() dpSelector {
	return dpSelector{Vendors: s.Vendors, Devices: s.Devices, Drivers: s.Drivers, ACPIIndexes: s.ACPIIndexes,
		PFNames: s.PFNames, RootDevices: s.RootDevices, LinkTypes: s.LinkTypes, IsRdma: s.IsRdma,
		NeedVhostNet: s.NeedVhostNet, AuxTypes: s.AuxTypes}
}

// Keys each object knows, per device type, for the "ignored key" notes.
var (
	resourceKeys = []string{"resourcePrefix", "resourceName", "deviceType", "excludeTopology", "selectors", "additionalInfo"}
	commonKeys   = []string{"vendors", "devices", "drivers"}
	selectorKeys = map[string][]string{
		dpNetDevice: append(append([]string{}, commonKeys...), "pciAddresses", "acpiIndexes", "pfNames", "rootDevices",
			"linkTypes", "isRdma", "needVhostNet", "ddpProfiles", "vdpaType", "pKeys"),
		dpAccelerator:  append(append([]string{}, commonKeys...), "pciAddresses", "acpiIndexes"),
		dpAuxNetDevice: append(append([]string{}, commonKeys...), "pfNames", "rootDevices", "linkTypes", "isRdma", "acpiIndexes", "needVhostNet", "auxTypes"),
	}
)

// decode finds the configuration to convert (key chooses one when the
// input holds several) and reads it as the plugin does, with the keys it
// ignores.
func decode(input []byte, key string) (*dpConfig, []string, error) {
	if len(input) > MaxInput {
		return nil, nil, fmt.Errorf("%w: %d bytes, more than %d: real configurations are a few KiB", ErrInvalid, len(input), MaxInput)
	}
	cs, err := configs(input)
	if err != nil {
		return nil, nil, err
	}
	chosen, err := choose(cs, key)
	if err != nil {
		return nil, nil, err
	}
	data := chosen.json
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, fmt.Errorf("%w: %s: empty document", ErrInvalid, chosen.name)
	}
	var c dpConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, nil, fmt.Errorf("%w: not the plugin's JSON (it would refuse to start)%s: %w", ErrInvalid, position(data, err), err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, fmt.Errorf("%w: the document is not a JSON object: %w", ErrInvalid, err)
	}
	if c.ResourceList == nil {
		return nil, nil, fmt.Errorf("%w: no \"resourceList\": nothing to convert", ErrInvalid)
	}
	if n := len(c.ResourceList); n > MaxResources {
		return nil, nil, fmt.Errorf("%w: %d resources, more than %d: a node has a handful", ErrInvalid, n, MaxResources)
	}
	for k, v := range top {
		if !strings.EqualFold(k, "resourceList") {
			continue
		}
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(v, &list); err == nil && len(list) == len(c.ResourceList) {
			c.unknown = make([][]string, len(list))
			for i, obj := range list {
				c.unknown[i] = unknownKeys(obj, resourceKeys)
			}
		}
	}
	return &c, unknownKeys(top, []string{"resourceList"}), nil
}

// selectorObjects parses selectors as the plugin's parseObjectOrSlice does
// for the device type: first as one object, then as a list of at least one
// object. It returns each object's value and raw keys.
func selectorObjects(raw *json.RawMessage, deviceType string) ([]dpSelector, []map[string]json.RawMessage, error) {
	if raw == nil || bytes.Equal(bytes.TrimSpace(*raw), []byte("null")) {
		return nil, nil, errors.New("selectors: required (the plugin dereferences it)")
	}
	var sels []dpSelector
	var err error
	switch deviceType {
	case dpAccelerator:
		sels, err = objectOrSlice[dpAccelSelector](*raw)
	case dpAuxNetDevice:
		sels, err = objectOrSlice[dpAuxSelector](*raw)
	default:
		sels, err = objectOrSlice[dpNetSelector](*raw)
	}
	if err != nil {
		return nil, nil, err
	}
	var keys []map[string]json.RawMessage
	if len(bytes.TrimSpace(*raw)) > 0 && bytes.TrimSpace(*raw)[0] == '{' {
		var one map[string]json.RawMessage
		err = json.Unmarshal(*raw, &one)
		keys = append(keys, one)
	} else {
		err = json.Unmarshal(*raw, &keys)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("selectors: %w", err)
	}
	return sels, keys, nil
}

// objectOrSlice decodes one selector object or a non-empty list of them.
// An object's own error (a field of the wrong type) is reported as such,
// not as "not a list".
func objectOrSlice[T interface{ selector() dpSelector }](raw []byte) ([]dpSelector, error) {
	var one *T
	err := json.Unmarshal(raw, &one)
	if err == nil {
		if one == nil {
			return nil, errors.New("selectors: null")
		}
		return []dpSelector{(*one).selector()}, nil
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
		return nil, fmt.Errorf("selectors: %w", fieldError(err))
	}
	var list []*T
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("selectors: neither a selector object nor a list of them: %w", fieldError(err))
	}
	if len(list) == 0 {
		return nil, errors.New("selectors: an empty list (the plugin needs at least one selector)")
	}
	out := make([]dpSelector, len(list))
	for i, s := range list {
		if s == nil {
			return nil, fmt.Errorf("selectors[%d]: null", i)
		}
		out[i] = (*s).selector()
	}
	return out, nil
}

// fieldError names the field of a JSON type error as the input spells
// it ("vendors: got a JSON string, want a list of strings"), keeping the
// error in its chain.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	field := te.Field[strings.LastIndexByte(te.Field, '.')+1:] // the embedded structs' names are Go's, not the input's
	return &typeError{msg: fmt.Sprintf("%s: got a JSON %s, want %s", field, te.Value, jsonKind(te.Type.String())), err: err}
}

// typeError says which field has the wrong JSON type, in the input's
// words.
type typeError struct {
	msg string
	err error
}

func (e *typeError) Error() string { return e.msg }
func (e *typeError) Unwrap() error { return e.err }

// jsonKind says a Go type of the plugin's selectors in JSON's words.
func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list of strings"
	case goType == "bool":
		return "true or false"
	}
	return "a string"
}

// unknownKeys lists, sorted, the keys of obj that match none of known
// case-insensitively (as encoding/json matches them).
func unknownKeys(obj map[string]json.RawMessage, known []string) []string {
	var out []string
	for k := range obj {
		found := false
		for _, kn := range known {
			if strings.EqualFold(k, kn) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// position is " at line L, column C" for a JSON syntax or type error.
func position(data []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return ""
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf(" at line %d, column %d", line, col)
}
