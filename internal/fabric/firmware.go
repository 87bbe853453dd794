package fabric

import (
	"fmt"
	"sort"
)

// firmwareFix says what to do about a port off its model's release, and
// why it matters.
const firmwareFix = "flash one release on every card of the model across the cluster " +
	"(mlxfwmanager -u, or mlxup, then mlxfwreset -d <pci> reset or a reboot): RoCE congestion " +
	"control, PCIe behaviour and known issues differ between releases, and one node's cards " +
	"behaving otherwise slows every collective through them (railyard doctor's known firmware " +
	"issues: docs/doctor.md#known-firmware-issues)"

// firmware warns, per port, where a NIC's firmware differs from the
// release most ports of its model (PCI vendor:device) run across the
// cluster's nodes: doctor's firmware check, which compares one node's
// cards, across nodes. Every port is compared, with a rail or without:
// firmware is per model, and a storage NIC's congestion control meets its
// peers' on the same switches. Ports of an unknown model or firmware are
// left out; ties go to the smaller version (top).
func firmware(ports []*portAt) []Finding {
	byModel := map[string][]*portAt{}
	for _, p := range ports {
		if p.Model != "" {
			byModel[p.Model] = append(byModel[p.Model], p)
		}
	}
	models := make([]string, 0, len(byModel))
	for m := range byModel {
		models = append(models, m)
	}
	sort.Strings(models)
	fw := func(p *portAt) string { return p.Firmware }
	var out []Finding
	for _, m := range models {
		odd, common, n, known := minority(byModel[m], fw)
		for _, p := range odd {
			out = append(out, Finding{Severity: Warn, Kind: KindFirmware, Node: p.name, Rail: p.Rail, NIC: p.NIC,
				Message: fmt.Sprintf("NIC %s on %s (model %s) runs firmware %s; %d of the model's %d ports with a known version run %s",
					p.NIC, p.name, m, p.Firmware, n, known, common),
				Fix: firmwareFix})
		}
	}
	return out
}
