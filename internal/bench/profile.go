package bench

import (
	"fmt"
	"strings"
)

// Profile is a fabric's pass marks: what its authors and vendors call a
// good result on that kind of fabric, instead of one threshold for all.
type Profile struct {
	Name string
	// LinkType is the link layer osu_latency's expected latency is looked
	// up by ("IB" or "Ethernet").
	LinkType string
	// Lossless says the fabric pauses instead of dropping: RoCE traffic
	// needs PFC on its priority (doctor's roce-qos check warns without
	// it); on a lossy one ECN (DCQCN) is what must be on instead.
	Lossless bool
	// RDMA says NCCL must run over RDMA on this fabric: a job that fell
	// back to TCP sockets fails the nccl-network check (cloud and virtual
	// fabrics may offer none, or another transport: a warning there).
	RDMA       bool
	Thresholds Thresholds
	// Why says what the marks rest on (docs/bench.md has the sources).
	Why string
}

// Profile names.
const (
	ProfileInfiniBand   = "infiniband"
	ProfileRoCELossless = "roce-lossless"
	ProfileRoCELossy    = "roce-lossy"
	ProfileCloud        = "cloud"
	ProfileVirtual      = "virtual"
)

// Profiles is one row per fabric. Fields left zero take the defaults
// (DefaultThresholds).
var Profiles = []Profile{
	{ProfileInfiniBand, "IB", true, true, Thresholds{LineRateFraction: 0.90, NCCLFraction: 0.90, MinScalingEfficiency: 0.90, MaxLatencyFactor: 2},
		"InfiniBand framing caps goodput at 99.4% (MTU 4096); perftest on HDR in AKS pods reaches 98.3%; Horovod publishes 90% scaling efficiency"},
	{ProfileRoCELossless, "Ethernet", true, true, Thresholds{LineRateFraction: 0.90, NCCLFraction: 0.85, MinScalingEfficiency: 0.90, MaxLatencyFactor: 2},
		"RoCE v2 framing caps goodput at 92.6% (MTU 1024) to 98.0% (MTU 4096); NVIDIA's RoCE pods reach 92.4 of 100 Gb/s at MTU 1024"},
	{ProfileRoCELossy, "Ethernet", false, true, Thresholds{LineRateFraction: 0.80, NCCLFraction: 0.75, MinScalingEfficiency: 0.80, MaxLatencyFactor: 3},
		"without PFC a drop costs a go-back-N retransmission of the window: loss shows as bandwidth below the lossless marks and a long latency tail"},
	{ProfileCloud, "Ethernet", false, false, Thresholds{LineRateFraction: 0.80, NCCLFraction: 0.80, MinScalingEfficiency: 0.80, MaxLatencyFactor: 3},
		"cloud RDMA (SR-IOV VFs of shared adapters, EFA, shared fabrics): the instance's advertised rate is shared and not every hop is the tenant's"},
	{ProfileVirtual, "Ethernet", false, false, Thresholds{LineRateFraction: 0.70, NCCLFraction: 0.70, MinScalingEfficiency: 0.75, MaxLatencyFactor: 5},
		"PVRDMA and SR-IOV in VMs: the published PVRDMA Horovod runs scale 1.57x/2.30x/3.00x on 2/3/4 nodes (75% to 78.5% efficiency), which their author calls linear"},
}

// ProfileNames lists the profiles' names in table order.
func ProfileNames() []string {
	out := make([]string, len(Profiles))
	for i, p := range Profiles {
		out[i] = p.Name
	}
	return out
}

// ProfileNamed returns the profile of a name.
func ProfileNamed(name string) (Profile, error) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("profile %q: want one of %s", name, strings.Join(ProfileNames(), ", "))
}

// ProfileFor picks the profile of a link layer, as a topology or a
// result states it: InfiniBand, or RoCE taken as lossless (the fabric
// RDMA is deployed on; name roce-lossy, cloud or virtual to judge by
// those). ok is false for an unknown link layer.
func ProfileFor(linkType string) (p Profile, ok bool) {
	switch normLinkType(linkType) {
	case "IB":
		p, _ = ProfileNamed(ProfileInfiniBand)
		return p, true
	case "Ethernet":
		p, _ = ProfileNamed(ProfileRoCELossless)
		return p, true
	}
	return Profile{}, false
}

// LinkTypeOf is the first link layer the results state ("" for none).
func LinkTypeOf(results []Labelled) string {
	for _, l := range results {
		if lt := normLinkType(l.Result.Info.LinkType); lt != "" {
			return lt
		}
	}
	return ""
}
