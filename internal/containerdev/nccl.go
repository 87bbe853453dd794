package containerdev

import (
	"slices"
	"strconv"
	"strings"
)

// NCCL is what the operator configured about NCCL (the agent's
// ncclCrossNIC, ncclProfile, ncclSocketIfname and ncclIBAddrFamily),
// carried unchanged by every delivery path (the device plugin's Config,
// late binding's view, the DRA driver's Config) to Env. The zero value
// configures nothing: Env then sets what the devices and the node say,
// and Railyard's defaults where the pod can override them.
type NCCL struct {
	// CrossNIC, when set, is NCCL_CROSS_NIC (0, 1 or 2), whatever the
	// fabric says.
	CrossNIC *int `json:"ncclCrossNIC,omitempty"`
	// Profile names a fabric profile (Profiles): its NCCL settings are
	// set on every path.
	Profile string `json:"ncclProfile,omitempty"`
	// SocketIfname, when set, is NCCL_SOCKET_IFNAME on every path, ""
	// setting none; nil leaves Railyard's default (DefaultSocketIfname)
	// where the pod can override it.
	SocketIfname *string `json:"ncclSocketIfname,omitempty"`
	// IBAddrFamily, when set ("AF_INET", "AF_INET6"), is
	// NCCL_IB_ADDR_FAMILY on every path: the family of the RoCE v2 GID
	// NCCL picks on each HCA. "" leaves AF_INET, NCCL's own default,
	// where the pod can override it.
	IBAddrFamily string `json:"ncclIBAddrFamily,omitempty"`
}

// AddrFamilies are the values of NCCL.IBAddrFamily (NCCL's
// NCCL_IB_ADDR_FAMILY).
var AddrFamilies = []string{"AF_INET", "AF_INET6"}

// DefaultSocketIfname keeps NCCL's bootstrap and socket traffic off the
// interfaces Railyard adds: NCCL's own exclusions when the variable is
// unset (docker, lo, virbr; src/misc/socket.cc, ncclFindInterfaces) and
// "net", the prefix of the secondary interfaces Multus names (net1,
// net2, ...). Unset, NCCL takes the first interface that is none of
// docker, lo and virbr, and a VF moved into the pod keeps its host
// ifindex, often below eth0's, so the bootstrap could go over a rail.
const DefaultSocketIfname = "^docker,lo,virbr,net"

// Profile is a fabric profile: the NCCL settings a kind of fabric needs,
// which an operator picks (NCCL.Profile). Each value is from NCCL's
// environment documentation (docs/userguide/source/env.rst in
// github.com/NVIDIA/nccl).
type Profile struct {
	Name  string
	About string
	Vars  Vars
}

// Profiles are the fabric profiles, by name.
var Profiles = []Profile{
	{
		Name: "adaptive-routing",
		About: "a fabric whose switches route adaptively (Spectrum-X RoCE; InfiniBand with AR). NCCL_IB_ADAPTIVE_ROUTING (since 2.16) " +
			"is on by default on InfiniBand and off on RoCE: 1 uses AR-capable transfers on RoCE too",
		Vars: Vars{{"NCCL_IB_ADAPTIVE_ROUTING", "1"}},
	},
	{
		Name: "ecmp",
		About: "a multi-level RoCE fabric balanced by ECMP hashing: NCCL_IB_QPS_PER_CONNECTION (since 2.10, default 1) 4 gives the " +
			"hash four flows per connection (NCCL: \"multi-level fabrics which need multiple queue pairs to have good routing entropy\"); " +
			"NCCL_IB_SPLIT_DATA_ON_QPS (since 2.18) 0 uses them round-robin, NCCL's default since 2.20 and not 2.18-2.19's split mode",
		Vars: Vars{{"NCCL_IB_QPS_PER_CONNECTION", "4"}, {"NCCL_IB_SPLIT_DATA_ON_QPS", "0"}},
	},
}

// ProfileNames lists the profiles' names, for validation.
func ProfileNames() []string {
	out := make([]string, len(Profiles))
	for i, p := range Profiles {
		out[i] = p.Name
	}
	return out
}

func profile(name string) (Profile, bool) {
	i := slices.IndexFunc(Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return Profiles[i], true
}

// SettingKind is what decides a setting, and so where Env sets it.
type SettingKind string

// Kinds of settings.
const (
	// FromDevices: the container's devices decide; set on every path.
	FromDevices SettingKind = "devices"
	// FromOperator: the operator's configuration, or the node's fabric
	// (what its ports' LLDP neighbors say); set on every path.
	FromOperator SettingKind = "operator"
	// RailyardDefault: Railyard's guess; set only where the pod's own
	// environment overrides it (EnvOptions.Overridable: the device
	// plugin's Allocate), never through CDI, whose edits the runtime
	// applies over the pod spec.
	RailyardDefault SettingKind = "default"
)

// ncclInput is what a setting's value is computed from.
type ncclInput struct {
	hcas   []string // RDMA devices, rail order
	leaves []string // the leaf of each device with an RDMA device ("" unknown)
	o      EnvOptions
}

// Setting is one row of the NCCL settings table: a variable Env sets,
// where its value comes from and when it is set (docs/agent.md, "NCCL
// settings", is this table). Every row needs at least one RDMA device in
// the container.
type Setting struct {
	Name, Source, When string
	value              func(in ncclInput) (v string, k SettingKind, ok bool)
}

// Settings is the NCCL settings table, in the order Env sets them.
var Settings = []Setting{
	{"NCCL_IB_HCA", "\"=\" and the container's RDMA devices in rail order (\"=\": exact names; mlx5_1 would also match mlx5_10)",
		"ncclIBHCA env, late binding and DRA (merged mode names them in the container's NCCL file)",
		func(in ncclInput) (string, SettingKind, bool) {
			return "=" + strings.Join(in.hcas, ","), FromDevices, in.o.NCCLIBHCA
		}},
	{"NCCL_CROSS_NIC", "ncclCrossNIC; else 0 when the node's LLDP neighbors put each of the container's HCAs (two or more) under a leaf of its own (rails isolated as far as the node sees)",
		"ncclCrossNIC set, or every HCA's leaf known and all different",
		func(in ncclInput) (string, SettingKind, bool) {
			if c := in.o.NCCL.CrossNIC; c != nil {
				return strconv.Itoa(*c), FromOperator, true
			}
			return "0", FromOperator, leavesIsolated(in.leaves)
		}},
	profileSetting("NCCL_IB_ADAPTIVE_ROUTING"),
	profileSetting("NCCL_IB_QPS_PER_CONNECTION"),
	profileSetting("NCCL_IB_SPLIT_DATA_ON_QPS"),
	{"NCCL_IB_ROCE_VERSION_NUM", "2: NCCL (2.21 and later) picks on each HCA the RoCE v2 GID of NCCL_IB_ADDR_FAMILY itself, at run time in the pod, when NCCL_IB_GID_INDEX is unset (ncclIbGetGidIndex); Railyard never sets NCCL_IB_GID_INDEX, one index for every HCA",
		"default, where the pod can override it",
		func(ncclInput) (string, SettingKind, bool) { return "2", RailyardDefault, true }},
	{"NCCL_IB_ADDR_FAMILY", "ncclIBAddrFamily; else AF_INET (NCCL's default)",
		"ncclIBAddrFamily set; else as a default, where the pod can override it",
		func(in ncclInput) (string, SettingKind, bool) {
			if f := in.o.NCCL.IBAddrFamily; f != "" {
				return f, FromOperator, true
			}
			return "AF_INET", RailyardDefault, true
		}},
	{"NCCL_SOCKET_IFNAME", "ncclSocketIfname; else " + DefaultSocketIfname + " (bootstrap off the rails Railyard adds)",
		"ncclSocketIfname set and not \"\"; else as a default, where the pod can override it",
		func(in ncclInput) (string, SettingKind, bool) {
			if s := in.o.NCCL.SocketIfname; s != nil {
				return *s, FromOperator, *s != ""
			}
			return DefaultSocketIfname, RailyardDefault, true
		}},
}

// profileSetting is the row of a variable fabric profiles set.
func profileSetting(name string) Setting {
	var in []string
	for _, p := range Profiles {
		if slices.ContainsFunc(p.Vars, func(v Var) bool { return v.Name == name }) {
			in = append(in, p.Name)
		}
	}
	return Setting{name, "the fabric profile ncclProfile (" + strings.Join(in, ", ") + ")", "the profile sets it",
		func(in ncclInput) (string, SettingKind, bool) {
			p, ok := profile(in.o.NCCL.Profile)
			if !ok {
				return "", FromOperator, false
			}
			i := slices.IndexFunc(p.Vars, func(v Var) bool { return v.Name == name })
			if i < 0 {
				return "", FromOperator, false
			}
			return p.Vars[i].Value, FromOperator, true
		}}
}

// leavesIsolated reports whether two or more devices each sit under a
// known leaf and no two share one.
func leavesIsolated(leaves []string) bool {
	if len(leaves) < 2 {
		return false
	}
	seen := map[string]bool{}
	for _, l := range leaves {
		if l == "" || seen[l] {
			return false
		}
		seen[l] = true
	}
	return true
}

// ncclEnv is the NCCL part of a container's environment: the table's
// rows that apply, in its order. Defaults are left out unless
// o.Overridable.
func ncclEnv(in ncclInput) Vars {
	if len(in.hcas) == 0 {
		return nil
	}
	var out Vars
	for _, s := range Settings {
		v, k, ok := s.value(in)
		if !ok || (k == RailyardDefault && !in.o.Overridable) {
			continue
		}
		out = append(out, Var{s.Name, v})
	}
	return out
}
