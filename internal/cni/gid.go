package cni

import (
	"context"
	"errors"
	"net"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// DefaultGIDWait is how long Run's ADD waits for the RoCE v2 GID of the
// pod's address: the kernel adds it from a work queue a little after the
// address is set.
const DefaultGIDWait = 2 * time.Second

// gidPoll is how often ADD reads the GID table again while it waits.
const gidPoll = 50 * time.Millisecond

// recordGID finds the RoCE v2 GID index the attachment's RDMA device has
// for the interface's addresses, once they are set, and records it
// (rec.GID): in the pod's namespace, through a sysfs mounted there, when
// the RDMA device moved into the pod (rdma: true, exclusive netns mode),
// else in the host's sysfs (shared netns mode, a share's NIC). It then
// checks it against the GID indexes of this sandbox's other attachments:
// NCCL_IB_GID_INDEX is one index for every HCA. Neither an unknown index
// nor a mismatch fails ADD (NCCL 2.21 and later pick each HCA's GID
// themselves, from NCCL_IB_ROCE_VERSION_NUM and NCCL_IB_ADDR_FAMILY):
// each is a warning in the log, which says how to fix it. The record also
// names the pod (CNI_ARGS), so that the agent, which has a Kubernetes
// client, records the mismatch as an Event on it.
func (p *Plugin) recordGID(ctx context.Context, s *session, a Args, rec *state.Record, res *current.Result) {
	// The pod, for the agent's Event on it when the indexes differ.
	if pod, ok := podArgs(a.PluginArgs); ok {
		rec.Pod = &state.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	}
	var addrs []net.IP
	for _, ip := range res.IPs {
		addrs = append(addrs, ip.Address.IP)
	}
	dev, inPod := rec.RDMA, true
	if dev == "" {
		if rec.PCI == "" {
			return
		}
		d, err := rdmaOf(s.fs, rec.PCI)
		if err != nil {
			return // no RDMA device: nothing for NCCL to choose
		}
		dev, inPod = d, false
	}
	if len(addrs) == 0 {
		return
	}
	read := func() ([]sysfs.GID, error) {
		if !inPod {
			return s.fs.GIDTable(dev)
		}
		var t []sysfs.GID
		err := p.Ops.WithSysfs(ctx, a.Netns, func(root string) error {
			var err error
			t, err = sysfs.New(root).GIDTable(dev)
			return err
		})
		return t, err
	}
	deadline := time.Now().Add(p.GIDWait)
	for {
		table, err := read()
		if err != nil {
			p.warn("the RoCE GID index of the pod's HCA is unknown: its GID table cannot be read", "hca", dev, "ifname", a.IfName, "err", err)
			return
		}
		g, err := containerdev.PickGID(dev, a.IfName, table, addrs)
		if errors.Is(err, containerdev.ErrNotRoCE) {
			return
		}
		if err == nil {
			rec.GID = &g
			break
		}
		if !time.Now().Before(deadline) {
			p.warn("the pod's HCA has no RoCE v2 GID of its address: RoCE traffic from it will not work", "hca", dev, "ifname", a.IfName, "err", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(gidPoll):
		}
	}
	p.checkSandboxGIDs(s, a, rec)
}

// checkSandboxGIDs warns when this sandbox's HCAs have their RoCE v2 GIDs
// at different indexes (containerdev.CheckGIDIndexes says how to fix
// it).
func (p *Plugin) checkSandboxGIDs(s *session, a Args, rec *state.Record) {
	gids := []containerdev.HCAGID{*rec.GID}
	recs, _ := s.store.List() // records that do not decode are another call's business
	for _, o := range recs {
		if o.ContainerID == a.ContainerID && o.Key != rec.Key && o.GID != nil {
			gids = append(gids, *o.GID)
		}
	}
	if idx, err := containerdev.CheckGIDIndexes(gids); err != nil {
		p.warn("RoCE GID indexes differ across the pod's HCAs", "gids", containerdev.GIDIndexes(gids), "err", err)
	} else if p.Log != nil {
		p.Log.Info("RoCE v2 GID index of the pod's HCAs", "index", idx, "gids", containerdev.GIDIndexes(gids))
	}
}
