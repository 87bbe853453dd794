package v1alpha1

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/railyard-io/railyard/internal/inputfile"
	"github.com/railyard-io/railyard/internal/pciaddr"
)

// ErrInvalid is wrapped by every error Load and Parse return for a
// document that is not a valid node policy.
var ErrInvalid = errors.New("invalid node policy")

// MaxPolicySize bounds a policy file: real policies are a few KiB.
const MaxPolicySize = 1 << 20

var (
	ifName = regexp.MustCompile(`^[^/:\s\x00]{1,15}$`)
)

// Decode strictly decodes YAML or JSON: unknown or duplicate fields are
// errors. It neither defaults nor validates.
func Decode(data []byte) (*NodePolicy, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: empty document", ErrInvalid)
	}
	var p NodePolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &p, nil
}

// Default fills in what a policy left out.
func Default(p *NodePolicy) {
	if p.SysfsRoot == "" {
		p.SysfsRoot = "/sys"
	}
	for i := range p.PFs {
		pf := &p.PFs[i]
		if pf.VFDriver == "" {
			pf.VFDriver = DriverKernel
		}
		if pf.GUIDs == "" {
			pf.GUIDs = AddressDerived
		}
		if pf.MACs == "" {
			pf.MACs = AddressDerived
		}
		if q := pf.QoS; q != nil {
			if q.Trust == "" {
				q.Trust = TrustDSCP
			}
			if q.ECN == nil {
				q.ECN = append([]int{}, q.PFC...)
			}
		}
		if a, err := pciaddr.Normalize(pf.PCIAddress); err == nil {
			pf.PCIAddress = a // else Validate says why
		}
	}
}

// Validate checks a defaulted policy and returns every problem.
func Validate(p *NodePolicy) field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{APIVersion}))
	}
	if p.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{Kind}))
	}
	for _, f := range []struct{ name, value string }{
		{"sysfsRoot", p.SysfsRoot}, {"cniStateDir", p.CNIStateDir}, {"podResourcesSocket", p.PodResourcesSocket},
	} {
		if f.value != "" && !strings.HasPrefix(f.value, "/") {
			errs = append(errs, field.Invalid(field.NewPath(f.name), f.value, "must be an absolute path"))
		}
	}
	keys := make([]string, len(p.PFs))
	for i := range p.PFs {
		errs = append(errs, validatePF(field.NewPath("pfs").Index(i), &p.PFs[i])...)
		keys[i] = p.PFs[i].Ref()
	}
	return append(errs, duplicatePFs(keys, func(i, j int) string {
		return fmt.Sprintf("%s (also pfs[%d])", p.PFs[i].Name(), j)
	})...)
}

// CheckResolved checks what only the node can tell: addrs[i] is the PCI
// address pfs[i] names on this node ("" when it names none). Two entries
// naming one PF (one by pciAddress, one by netdev) would undo each other
// on every run, so such a policy is refused, naming both.
func CheckResolved(p *NodePolicy, addrs []string) error {
	return invalid(duplicatePFs(addrs, func(i, j int) string {
		return fmt.Sprintf("%s is PF %s, which pfs[%d] (%s) names too", p.PFs[i].Ref(), addrs[i], j, p.PFs[j].Ref())
	}))
}

// duplicatePFs reports each pfs[i] whose key ("" for none) an earlier
// entry j has; describe(i, j) says how.
func duplicatePFs(keys []string, describe func(i, j int) string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, k := range keys {
		if k == "" {
			continue
		}
		if j, dup := seen[k]; dup {
			errs = append(errs, field.Duplicate(field.NewPath("pfs").Index(i), describe(i, j)))
			continue
		}
		seen[k] = i
	}
	return errs
}

// invalid is nil for no errors, else ErrInvalid with every problem, one
// per line.
func invalid(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  " + e.Error()
	}
	return fmt.Errorf("%w:\n%s", ErrInvalid, strings.Join(lines, "\n"))
}

func validatePF(path *field.Path, pf *PF) field.ErrorList {
	var errs field.ErrorList
	switch {
	case pf.PCIAddress == "" && pf.Netdev == "":
		errs = append(errs, field.Required(path, "pciAddress or netdev"))
	case pf.PCIAddress != "" && pf.Netdev != "":
		errs = append(errs, field.Invalid(path.Child("netdev"), pf.Netdev, "give pciAddress or netdev, not both"))
	case pf.PCIAddress != "" && !pciaddr.IsCanonical(pf.PCIAddress):
		reason := "not in the kernel's form" // Default normalises every address Parse accepts
		var pe *pciaddr.Error
		if _, err := pciaddr.Parse(pf.PCIAddress); errors.As(err, &pe) {
			reason = pe.Reason
		}
		errs = append(errs, field.Invalid(path.Child("pciAddress"), pf.PCIAddress, "must be a PCI address DDDD:BB:DD.F ("+reason+")"))
	case pf.Netdev != "" && !ifName.MatchString(pf.Netdev):
		errs = append(errs, field.Invalid(path.Child("netdev"), pf.Netdev, "must be an interface name (1-15 characters, no '/', ':' or spaces)"))
	}
	if pf.NumVFs < 0 || pf.NumVFs > MaxVFs {
		errs = append(errs, field.Invalid(path.Child("numVFs"), pf.NumVFs, fmt.Sprintf("must be 0-%d", MaxVFs)))
	}
	if pf.VFDriver != DriverKernel && pf.VFDriver != DriverVFIO {
		errs = append(errs, field.NotSupported(path.Child("vfDriver"), pf.VFDriver, []string{DriverKernel, DriverVFIO}))
	}
	if pf.LinkLayer != "" && pf.LinkLayer != LinkLayerInfiniBand && pf.LinkLayer != LinkLayerEthernet {
		errs = append(errs, field.NotSupported(path.Child("linkLayer"), pf.LinkLayer, []string{LinkLayerInfiniBand, LinkLayerEthernet}))
	}
	for _, f := range []struct{ name, value string }{{"guids", pf.GUIDs}, {"macs", pf.MACs}} {
		if f.value != AddressDerived && f.value != AddressKeep {
			errs = append(errs, field.NotSupported(path.Child(f.name), f.value, []string{AddressDerived, AddressKeep}))
		}
	}
	if pf.PKey != "" {
		if _, err := ParsePKey(pf.PKey); err != nil {
			errs = append(errs, field.Invalid(path.Child("pkey"), pf.PKey, err.Error()))
		}
		if pf.LinkLayer == LinkLayerEthernet {
			errs = append(errs, field.Invalid(path.Child("pkey"), pf.PKey, "a partition key needs InfiniBand"))
		}
	}
	if q := pf.QoS; q != nil {
		qp := path.Child("qos")
		if pf.LinkLayer == LinkLayerInfiniBand {
			errs = append(errs, field.Invalid(qp, "", "PFC, trust and ECN are RoCE (Ethernet) settings"))
		}
		if q.Trust != TrustDSCP && q.Trust != TrustPCP {
			errs = append(errs, field.NotSupported(qp.Child("trust"), q.Trust, []string{TrustDSCP, TrustPCP}))
		}
		for _, l := range []struct {
			name  string
			prios []int
		}{{"pfc", q.PFC}, {"ecn", q.ECN}} {
			seen := map[int]bool{}
			for i, p := range l.prios {
				switch {
				case p < 0 || p > 7:
					errs = append(errs, field.Invalid(qp.Child(l.name).Index(i), p, "must be a priority 0-7"))
				case seen[p]:
					errs = append(errs, field.Duplicate(qp.Child(l.name).Index(i), p))
				}
				seen[p] = true
			}
		}
	}
	return errs
}

// Bits returns priorities as a bitmap (bit p for priority p), as DCB and
// the ecn/ files have them.
func Bits(prios []int) uint8 {
	var b uint8
	for _, p := range prios {
		if p >= 0 && p < 8 {
			b |= 1 << p
		}
	}
	return b
}

// ParsePKey parses a partition key "0x8001" (or "8001"): 15 bits of key,
// the top bit is full (1) or limited (0) membership; 0x0000 and 0x7fff
// (and 0xffff, the default partition) are not allowed here.
func ParsePKey(s string) (uint16, error) {
	h := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	if h == "" || len(h) > 4 {
		return 0, fmt.Errorf("must be a 16-bit hex partition key (0x0001-0xfffe)")
	}
	v, err := strconv.ParseUint(h, 16, 16)
	if err != nil {
		return 0, fmt.Errorf("must be a 16-bit hex partition key (0x0001-0xfffe)")
	}
	if v&0x7fff == 0 || v == 0xffff || v == 0x7fff {
		return 0, fmt.Errorf("%#04x is reserved (the invalid key or the default partition)", v)
	}
	return uint16(v), nil
}

// Parse decodes, defaults and validates a policy document. On a validation
// failure the error lists every problem, one per line.
func Parse(data []byte) (*NodePolicy, error) {
	p, err := Decode(data)
	if err != nil {
		return nil, err
	}
	Default(p)
	if err := invalid(Validate(p)); err != nil {
		return nil, err
	}
	return p, nil
}

// ReadFile reads a policy file: a regular file of at most MaxPolicySize
// bytes (inputfile: a FIFO or a device such as /dev/zero fails with
// inputfile.ErrNotRegular, a larger file with inputfile.ErrTooLarge).
func ReadFile(path string) ([]byte, error) {
	b, err := inputfile.Read(path, MaxPolicySize)
	if err != nil {
		return nil, fmt.Errorf("reading node policy: %w", err)
	}
	return b, nil
}

// Load reads and parses the policy file at path.
func Load(path string) (*NodePolicy, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
