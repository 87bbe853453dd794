package migrate

import (
	"fmt"
	"strings"

	"github.com/railyard-io/railyard/api/config/v1alpha1"
)

// pciIDKinds says, per PCI vendor, which device IDs are SR-IOV virtual
// functions and which physical functions: well-known RDMA and SR-IOV NICs,
// as the kernel drivers' PCI tables mark them (mlx5_core's
// MLX5_PCI_DEV_IS_VF, bnxt_en's *_VF boards, the Intel VF drivers'). An ID
// not listed says nothing.
var pciIDKinds = map[string]map[string]string{
	"15b3": { // Mellanox / NVIDIA
		"1013": v1alpha1.KindPF, "1015": v1alpha1.KindPF, "1017": v1alpha1.KindPF, "1019": v1alpha1.KindPF,
		"101b": v1alpha1.KindPF, "101d": v1alpha1.KindPF, "101f": v1alpha1.KindPF, "1021": v1alpha1.KindPF,
		"1023": v1alpha1.KindPF, "1027": v1alpha1.KindPF, "a2d2": v1alpha1.KindPF, "a2d6": v1alpha1.KindPF,
		"a2dc": v1alpha1.KindPF, "a2df": v1alpha1.KindPF,
		"1014": v1alpha1.KindVF, "1016": v1alpha1.KindVF, "1018": v1alpha1.KindVF, "101a": v1alpha1.KindVF,
		"101c": v1alpha1.KindVF, "101e": v1alpha1.KindVF, "a2d3": v1alpha1.KindVF,
	},
	"14e4": { // Broadcom NetXtreme
		"1750": v1alpha1.KindPF, "1751": v1alpha1.KindPF, "1752": v1alpha1.KindPF,
		"1806": v1alpha1.KindVF, "1807": v1alpha1.KindVF, "1819": v1alpha1.KindVF, "1606": v1alpha1.KindVF,
		"1609": v1alpha1.KindVF, "16c1": v1alpha1.KindVF, "16cb": v1alpha1.KindVF, "16d3": v1alpha1.KindVF,
		"16dc": v1alpha1.KindVF, "16e1": v1alpha1.KindVF, "16e5": v1alpha1.KindVF,
	},
	"8086": { // Intel
		"154c": v1alpha1.KindVF, "10ed": v1alpha1.KindVF, "1889": v1alpha1.KindVF, "1515": v1alpha1.KindVF,
		"37cd": v1alpha1.KindVF, "10ca": v1alpha1.KindVF, "1520": v1alpha1.KindVF,
		"1572": v1alpha1.KindPF, "1583": v1alpha1.KindPF, "1584": v1alpha1.KindPF, "158a": v1alpha1.KindPF,
		"158b": v1alpha1.KindPF, "37d0": v1alpha1.KindPF, "37d1": v1alpha1.KindPF, "37d2": v1alpha1.KindPF,
		"37d3": v1alpha1.KindPF, "1592": v1alpha1.KindPF, "1593": v1alpha1.KindPF, "159b": v1alpha1.KindPF,
		"10fb": v1alpha1.KindPF, "1528": v1alpha1.KindPF, "1563": v1alpha1.KindPF, "10c9": v1alpha1.KindPF,
		"1521": v1alpha1.KindPF,
	},
}

// driverKinds are kernel drivers that bind only VFs or only PFs.
// mlx5_core, bnxt_en and vfio-pci bind both and say nothing.
var driverKinds = map[string]string{
	"iavf": v1alpha1.KindVF, "i40evf": v1alpha1.KindVF, "ixgbevf": v1alpha1.KindVF, "igbvf": v1alpha1.KindVF,
	"i40e": v1alpha1.KindPF, "ice": v1alpha1.KindPF, "ixgbe": v1alpha1.KindPF, "igb": v1alpha1.KindPF,
}

// evidence is one reason to believe a resource hands out VFs or PFs.
type evidence struct {
	kind, why string
}

// selectorEvidence is what one selector object says about the kind of
// device the plugin put in the pool. The plugin's device list holds every
// VF, and a PF only when it has no VFs (and no default route); its pfNames
// and rootDevices selectors compare a device's PF name or address, which
// only VFs have.
func selectorEvidence(field string, s dpSelector) []evidence {
	var out []evidence
	if len(s.PFNames) > 0 {
		out = append(out, evidence{v1alpha1.KindVF, field + ".pfNames: the plugin matches pfNames only against VFs (a PF has no PF name)"})
	}
	if len(s.RootDevices) > 0 {
		out = append(out, evidence{v1alpha1.KindVF, field + ".rootDevices: the plugin matches rootDevices only against VFs (a PF has no PF address)"})
	}
	if k, ok := idsKind(s.Vendors, s.Devices); ok {
		why := fmt.Sprintf("%s.devices %v are %s device IDs", field, s.Devices, strings.ToUpper(k))
		if k == v1alpha1.KindVF {
			why += " (inside a VM a VF has no PF and both plugins see it as one: there use --device-kind pf)"
		}
		out = append(out, evidence{k, why})
	}
	if k, ok := listKind(s.Drivers, func(d string) string { return driverKinds[d] }); ok {
		out = append(out, evidence{k, fmt.Sprintf("%s.drivers %v bind only %ss", field, s.Drivers, strings.ToUpper(k))})
	}
	return out
}

// idsKind: every device ID is known, for every vendor given, as the same
// kind. Without vendors a bare ID is ambiguous (IDs are per vendor).
func idsKind(vendors, devices []string) (string, bool) {
	if len(vendors) == 0 {
		return "", false
	}
	return listKind(devices, func(id string) string {
		kind := ""
		for _, v := range vendors {
			k := pciIDKinds[normalizeHex(v)][normalizeHex(id)]
			if k == "" || (kind != "" && k != kind) {
				return ""
			}
			kind = k
		}
		return kind
	})
}

// listKind returns the kind every value of list has, if they all have the
// same non-empty one.
func listKind(list []string, kindOf func(string) string) (string, bool) {
	kind := ""
	for _, v := range list {
		k := kindOf(v)
		if k == "" || (kind != "" && k != kind) {
			return "", false
		}
		kind = k
	}
	return kind, kind != ""
}

func normalizeHex(s string) string {
	return strings.TrimPrefix(strings.ToLower(s), "0x")
}

// decideKind picks the pool's device kind from the evidence, or forced
// when the operator gave one, and reports how.
func decideKind(r *Report, res string, ev []evidence, forced string) string {
	kinds := map[string][]string{}
	for _, e := range ev {
		kinds[e.kind] = append(kinds[e.kind], e.why)
	}
	vf, pf := kinds[v1alpha1.KindVF], kinds[v1alpha1.KindPF]
	switch {
	case forced != "":
		other := vf
		if forced == v1alpha1.KindVF {
			other = pf
		}
		if len(other) > 0 {
			r.add(res, "deviceKind", Note, "%s as forced by --device-kind, although %s", forced, strings.Join(other, "; "))
		} else {
			r.add(res, "deviceKind", Changed, "%s as forced by --device-kind", forced)
		}
		return forced
	case len(vf) > 0 && len(pf) > 0:
		r.add(res, "deviceKind", Dropped, "the resource selects VFs (%s) and PFs (%s); a Railyard pool serves one kind: "+
			"kept vf, give the PFs a pool of their own with deviceKind: pf", strings.Join(vf, "; "), strings.Join(pf, "; "))
		return v1alpha1.KindVF
	case len(vf) > 0:
		r.add(res, "deviceKind", Changed, "vf, because %s", strings.Join(vf, "; "))
		return v1alpha1.KindVF
	case len(pf) > 0:
		r.add(res, "deviceKind", Changed, "pf, because %s (the plugin lists a PF only while it has no VFs)", strings.Join(pf, "; "))
		return v1alpha1.KindPF
	default:
		r.add(res, "deviceKind", Note, "vf assumed: the plugin hands out a PF's VFs when it has some and the PF itself "+
			"otherwise, and nothing in this resource says which; if the matched PFs have no VFs use deviceKind: pf "+
			"(or --device-kind pf); the agent warns about a pool that matches no device and says so")
		return v1alpha1.KindVF
	}
}
