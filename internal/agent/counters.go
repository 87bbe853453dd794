package agent

import (
	"context"
	"time"

	"github.com/railyard-io/railyard/internal/podresources/podlist"
	"github.com/railyard-io/railyard/internal/rdmacounter"
	"github.com/railyard-io/railyard/internal/rdmastats"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// ownersTimeout bounds the PodResources list one scrape makes.
const ownersTimeout = 2 * time.Second

// registerCounters exports the RDMA port counters of the current
// topology's devices on the agent's registry (internal/rdmastats,
// docs/counters.md), each labelled with the container kubelet lists as
// holding it. A device allocated by PCI address (VF and PF pools) names
// its holder; late binding's tokens and shares name none. The job_name
// label comes from the agent's watch of its node's pods (watchPodJobs):
// PodResources carries no pod labels or owners; without that watch it
// stays empty.
func (a *Agent) registerCounters(lister podlist.Lister) {
	devices := func() []rdmacounter.Device {
		t := a.Topology()
		if t == nil {
			return nil
		}
		owners := map[string]rdmacounter.Owner{}
		ctx, cancel := context.WithTimeout(context.Background(), ownersTimeout)
		defer cancel()
		if pods, err := lister.List(ctx); err == nil {
			for id, h := range podlist.Holders(pods) {
				owners[id] = rdmacounter.Owner{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container, Job: a.jobs.job(h.Namespace, h.Pod)}
			}
		}
		return rdmacounter.Devices(t, owners)
	}
	a.metrics.reg.MustRegister(rdmastats.New(sysfs.New(a.cfg.SysfsRoot), a.cfg.NodeName, devices))
}
