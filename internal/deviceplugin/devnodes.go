package deviceplugin

import (
	"errors"
	"fmt"
	"os"

	"github.com/railyard-io/railyard/internal/containerdev"
)

// errNoVerbs is returned for a device without a verbs char device.
var errNoVerbs = errors.New("no RDMA verbs device")

// deviceNodes returns the nodes (names under /dev/infiniband) one device
// gets: its own verbs node and what the pool's Config.Nodes asks for.
// Their host paths under the configured dev root must exist: a missing
// node would fail the container later with a worse error.
func (p *Plugin) deviceNodes(d Device) ([]string, error) {
	if d.Uverbs == "" {
		return nil, errNoVerbs
	}
	nodes := p.cfg.Nodes.Nodes(d.Uverbs, d.UMAD, d.ISSM)
	for _, n := range nodes {
		host := containerdev.HostPath(p.cfg.DevRoot, n)
		if _, err := os.Stat(host); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("device node %s is missing", host)
			}
			return nil, fmt.Errorf("device node %s: %w", host, err)
		}
	}
	return nodes, nil
}

// containerDevice is what a container gets for d: a share names its NIC.
func (p *Plugin) containerDevice(d Device, nodes []string) containerdev.Device {
	pci := d.ID
	if d.Share >= 0 {
		pci = d.PF
	}
	return containerdev.Device{Resource: p.cfg.Resource, PCI: pci, PF: d.PF, Rail: d.Rail, RDMA: d.RDMA, Nodes: nodes}
}
