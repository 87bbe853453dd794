package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/railyard-io/railyard/internal/firmware"
)

// firmware checks that the RDMA NICs of one model (PCI vendor and device
// ID) run one firmware version across the node: cards of one model on
// different releases behave differently (congestion control, PCIe
// relaxed ordering, bugs fixed in one and not the other), and a rail that
// is slower than its peers slows every collective. Known issues of the
// releases found warn; a release the firmware policy refuses fails.
func (n *node) firmware(context.Context) []Check {
	byModel := map[firmware.Model]map[string][]string{} // model -> fw_ver -> RDMA devices
	unread := map[firmware.Model][]string{}
	var order []firmware.Model
	for _, x := range n.topo.NICs {
		m := firmware.Model{Vendor: x.Vendor, Device: x.Device}
		if _, ok := byModel[m]; !ok {
			byModel[m] = map[string][]string{}
			order = append(order, m)
		}
		v, err := n.fs.FirmwareVersion(x.RDMA)
		if err != nil {
			unread[m] = append(unread[m], fmt.Sprintf("%s: %v", x.RDMA, err))
			continue
		}
		byModel[m][v] = append(byModel[m][v], x.RDMA)
	}
	var out []Check
	for _, m := range order {
		c := Check{ID: "firmware", Subject: m.String(), Status: OK}
		versions := slices.Sorted(maps.Keys(byModel[m]))
		var parts []string
		for _, v := range versions {
			devs := byModel[m][v]
			parts = append(parts, fmt.Sprintf("%s on %s", v, strings.Join(devs, ", ")))
		}
		c.Read = append(c.Read, "sysfs class/infiniband/<dev>/fw_ver: "+strings.Join(parts, "; "))
		if len(unread[m]) > 0 {
			c.Read = append(c.Read, "unreadable: "+strings.Join(unread[m], "; "))
		}
		switch {
		case len(versions) == 0:
			c.Status, c.Summary = Skip, "cannot read the firmware version of any NIC of this model"
		case len(versions) > 1:
			c.Status = Warn
			c.Summary = fmt.Sprintf("%d firmware versions on one model: %s", len(versions), strings.Join(parts, "; "))
			c.Fix = "flash one release on every card of the model (mlxfwmanager -u, or mlxup), then mlxfwreset -d <pci> reset or reboot"
		case len(unread[m]) > 0:
			c.Status, c.Summary = Skip, fmt.Sprintf("firmware %s where it could be read; not every NIC of the model could be", versions[0])
		default:
			c.Summary = fmt.Sprintf("every NIC of the model runs %s", versions[0])
		}
		// Known issues of the releases found (firmwareIssues): a warning
		// with the notes' workaround, whatever the rest said.
		var issues, fixes []string
		for _, v := range versions {
			for _, fi := range firmware.KnownIssues(m, v) {
				issues = append(issues, fmt.Sprintf("%s on %s: %s", v, strings.Join(byModel[m][v], ", "), fi))
				fixes = append(fixes, fi.ID+": "+fi.Fix)
			}
		}
		if len(issues) > 0 {
			if c.Status == OK {
				c.Summary = "" // "every NIC runs ..." is in Read
			}
			c.Status = Warn
			c.Summary = strings.Join(append(nonEmpty(c.Summary), issues...), "; ")
			c.Fix = strings.Join(append(nonEmpty(c.Fix), append(fixes, "or move to a release whose notes no longer list the issue")...), "; ")
		}
		// The policy's refusals: a failure, whatever the rest said.
		var refused []string
		for _, v := range versions {
			if why := n.opt.Firmware.Refused(m, v); why != "" {
				refused = append(refused, fmt.Sprintf("%s refused: %s", strings.Join(byModel[m][v], ", "), why))
			}
		}
		if len(refused) > 0 {
			c.Status = Fail
			c.Summary = strings.Join(append(refused, nonEmpty(c.Summary)...), "; ")
			c.Fix = strings.Join(append([]string{"flash an accepted release (mlxfwmanager -u, or mlxup, then mlxfwreset -d <pci> reset or a reboot); the agent, with the same firmware policy, taints these NICs NoSchedule until then"}, nonEmpty(c.Fix)...), "; ")
		}
		out = append(out, c)
	}
	return out
}

// nonEmpty is s as a list, empty when s is "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
