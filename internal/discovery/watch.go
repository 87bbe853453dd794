package discovery

import (
	"slices"
	"strconv"

	"github.com/railyard-io/railyard/internal/sysfs"
	"github.com/railyard-io/railyard/internal/topology"
)

// ChangedPort reads the state of every RDMA port of the model t from the
// tree at root and reports the first whose state differs from the model's
// (or vanished), as "mlx5_3/1". It is cheap (one small read per port) and
// catches what file events cannot: real sysfs attributes raise no event
// when a link goes down. A nil model has nothing to compare.
func ChangedPort(root string, t *topology.Topology) (string, bool) {
	if t == nil {
		return "", false
	}
	fs := sysfs.New(root)
	check := func(rdma string, ports []topology.Port) (string, bool) {
		for _, p := range ports {
			if st, err := fs.PortState(rdma, p.Num); err != nil || st != p.State {
				return rdma + "/" + strconv.Itoa(p.Num), true
			}
		}
		return "", false
	}
	for _, n := range t.NICs {
		if port, ok := check(n.RDMA, n.Ports); ok {
			return port, true
		}
		for _, vf := range n.VFs {
			if port, ok := check(vf.RDMA, vf.Ports); ok {
				return port, true
			}
		}
	}
	return "", false
}

// WatchPaths are the paths of the tree at root whose file events mean the
// model t may be stale: the device lists and every RDMA port directory of
// the model (see sysfs.FS.WatchPaths), sorted.
func WatchPaths(root string, t *topology.Topology) []string {
	ports := map[string][]int{}
	add := func(rdma string, ps []topology.Port) {
		for _, p := range ps {
			ports[rdma] = append(ports[rdma], p.Num)
		}
	}
	if t != nil {
		for _, n := range t.NICs {
			add(n.RDMA, n.Ports)
			for _, vf := range n.VFs {
				add(vf.RDMA, vf.Ports)
			}
		}
	}
	paths := sysfs.New(root).WatchPaths(ports)
	slices.Sort(paths)
	return paths
}
