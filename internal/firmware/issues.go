package firmware

import (
	"fmt"
	"slices"
)

// Issue is a known issue NVIDIA's firmware release notes list for
// a ConnectX model, that touches what Railyard checks or relies on (the
// link, the congestion control doctor judges, the counters railyard top
// and the alerts read). Only issues whose notes were read are here, each
// with its source; it is not a list of every known issue.
type Issue struct {
	Device uint16 // PCI device ID of the model (vendor 15b3)
	// From is the version the notes say it was detected (discovered) in;
	// To the newest release whose notes, as read, still list it. Versions
	// in between have it; after To, the notes were not read.
	From, To string
	ID       string // NVIDIA's internal reference
	What     string // the issue, as the notes say it
	Fix      string // the workaround
	Source   string // the release notes' Known Issues page listing it at To
}

const (
	ccPerPriority    = "congestion control (ECN) configuration applies to every priority, not per priority"
	ccPerPriorityFix = "configure ECN the same on every priority (sysfs ecn/roce_rp/enable/<prio> and roce_np, or mlxconfig ROCE_CC_PRIO_MASK_P<port>): doctor's roce-qos per-priority verdicts assume it works per priority"
	pccLoopback      = "with programmable congestion control, internal loopback traffic is limited to wire speed"
	pccLoopbackFix   = "mlxconfig ... ROCE_CC_LEGACY_DCQCN=1 returns to hardware congestion control (the notes' workaround); bench runs with both pods on one node measure the loopback"
)

// issues is the table. Sources: NVIDIA ConnectX-6 Dx, ConnectX-6 Lx and
// ConnectX-7 firmware release notes, "Known Issues" (docs/doctor.md lists
// them).
var issues = []Issue{
	{0x101d, "22.45.1020", "22.46.3048", "4394475", ccPerPriority, ccPerPriorityFix, "https://docs.nvidia.com/networking/display/connectx6dxfirmwarev22463048/known+issues"},
	{0x101f, "26.45.1020", "26.48.1000", "4394475", ccPerPriority, ccPerPriorityFix, "https://docs.nvidia.com/networking/display/connectx6lxfirmwarev26481000/Known-Issues"},
	{0x1021, "28.45.1020", "28.46.3048", "4394475", ccPerPriority, ccPerPriorityFix, "https://docs.nvidia.com/networking/display/ConnectX7Firmwarev28463048/Known+Issues"},
	{0x101d, "22.43.2026", "22.43.3608", "4402045", pccLoopback, pccLoopbackFix, "https://docs.nvidia.com/networking/display/connectx6dxfirmwarev22433608lts/known+issues"},
	{0x1021, "28.36.1010", "28.36.1700", "3327847",
		"the CNP received, handled and ignored hardware counters stop working after moving to programmable congestion control mode",
		"railyard top's CONG/s and the cnp_* series read 0 on these NICs whatever the congestion: do not trust them on this release",
		"https://docs.nvidia.com/networking/display/connectx7firmwarev28361700/known+issues"},
	{0x1021, "28.38.1002", "28.38.1900", "3363753",
		"the link is down with the MMS1V00-WM (400G DR4) optical module",
		"a port DOWN with that module: use another release or module",
		"https://docs.nvidia.com/networking/display/ConnectX7Firmwarev28381900/Known+Issues"},
}

// nvidia is the PCI vendor ID of every model in the table (Mellanox's).
const nvidia = 0x15b3

// KnownIssues returns the table's issues of a model's firmware version.
// A version that does not parse has none.
func KnownIssues(m Model, version string) []Issue {
	v, ok := ParseVersion(version)
	if !ok {
		return nil
	}
	var out []Issue
	for _, fi := range issues {
		from, _ := ParseVersion(fi.From)
		to, _ := ParseVersion(fi.To)
		if m.Vendor == nvidia && fi.Device == m.Device && v.Compare(from) >= 0 && v.Compare(to) <= 0 {
			out = append(out, fi)
		}
	}
	return out
}

// issueKnown reports whether the table has an issue with NVIDIA's
// reference id.
func issueKnown(id string) bool {
	return slices.ContainsFunc(issues, func(fi Issue) bool { return fi.ID == id })
}

// issueIDs lists the table's references, each once, sorted.
func issueIDs() []string {
	var ids []string
	for _, fi := range issues {
		ids = append(ids, fi.ID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// String is the issue in one line, with its source.
func (fi Issue) String() string {
	return fmt.Sprintf("NVIDIA known issue %s (detected in %s, still listed in the %s release notes, %s): %s", fi.ID, fi.From, fi.To, fi.Source, fi.What)
}
