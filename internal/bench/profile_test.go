package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func horovod(throughput float64) Result {
	return Result{Tool: ToolHorovod, Kind: KindTraining, OK: true, Summary: map[string]float64{SumTotalThroughput: throughput},
		Info: Info{Unit: "img/s"}}
}

// The published PVRDMA Horovod runs scale 1.57x, 2.30x and 3.00x on 2, 3
// and 4 nodes, which their author calls linear: the default 90% mark fails
// them, the virtual profile passes them.
func TestProfileVirtualPVRDMAScalingSeed(t *testing.T) {
	t.Parallel()
	results := []Labelled{
		{Scenario: "rdma", Nodes: 1, Result: horovod(100)},
		{Scenario: "rdma", Nodes: 2, Result: horovod(157)},
		{Scenario: "rdma", Nodes: 3, Result: horovod(230)},
		{Scenario: "rdma", Nodes: 4, Result: horovod(300)},
	}
	statuses := func(th Thresholds) []Status {
		var out []Status
		for _, v := range Judge(JudgeInput{Results: results, Thresholds: th}) {
			if v.Check == CheckScalingEfficiency {
				out = append(out, v.Status)
			}
		}
		return out
	}
	if d := cmp.Diff([]Status{StatusFail, StatusFail, StatusFail}, statuses(Thresholds{})); d != "" {
		t.Errorf("default marks (-want +got):\n%s", d)
	}
	virtual, err := ProfileNamed(ProfileVirtual)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Status{StatusPass, StatusPass, StatusPass}, statuses(virtual.Thresholds)); d != "" {
		t.Errorf("virtual profile (-want +got):\n%s", d)
	}
}

// The OSU seeds (osu_bw 12.06 GB/s on 100G EDR, osu_latency 1.77 us) under
// the InfiniBand profile: both judged, both pass.
func TestProfileInfiniBandOSUSeeds(t *testing.T) {
	t.Parallel()
	ib, ok := ProfileFor("InfiniBand")
	if !ok || ib.Name != ProfileInfiniBand {
		t.Fatalf("ProfileFor(InfiniBand) = %+v, %v", ib, ok)
	}
	in := JudgeInput{LineRateGbps: 100, LinkType: ib.LinkType, Thresholds: ib.Thresholds, Results: []Labelled{
		{Scenario: "rdma", Result: Parse([]byte(osuBWOutput))},
		{Scenario: "rdma", Result: Parse([]byte(osuLatOutput))},
	}}
	var got []string
	for _, v := range Judge(in) {
		got = append(got, v.Check+" "+string(v.Status))
	}
	if d := cmp.Diff([]string{"line-rate pass", "osu-latency pass"}, got); d != "" {
		t.Errorf("verdicts (-want +got):\n%s", d)
	}
}

func TestProfileTable(t *testing.T) {
	t.Parallel()
	want := []string{"infiniband", "roce-lossless", "roce-lossy", "cloud", "virtual"}
	if d := cmp.Diff(want, ProfileNames()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	for _, p := range Profiles {
		th := p.Thresholds
		for _, f := range []float64{th.LineRateFraction, th.NCCLFraction, th.MinScalingEfficiency} {
			if !(f > 0 && f <= 1) {
				t.Errorf("%s: mark %g not a fraction", p.Name, f)
			}
		}
		if th.MaxLatencyFactor < 1 || p.Why == "" || normLinkType(p.LinkType) == "" {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
	if _, err := ProfileNamed("lossy"); err == nil || !strings.Contains(err.Error(), "roce-lossy") {
		t.Errorf("unknown profile: %v", err)
	}
	for lt, name := range map[string]string{"IB": ProfileInfiniBand, "Ethernet": ProfileRoCELossless, "": ""} {
		p, ok := ProfileFor(lt)
		if p.Name != name || ok != (name != "") {
			t.Errorf("ProfileFor(%q) = %s, %v", lt, p.Name, ok)
		}
	}
}

// The published RoCE lab: a DGX-1 cabled with 2 of its 4 NICs, 22.9 GB/s
// nccl-tests bus bandwidth over 2x100G. Divided by the model's 4 NICs it
// fails; with --nics 2 it passes under roce-lossless (91.6% of 25 GB/s).
func TestNCCLTwoNICDGX1Seed(t *testing.T) {
	t.Parallel()
	r := Result{Tool: "all_reduce_perf", Kind: KindNCCL, OK: true, Summary: map[string]float64{SumMaxBusBWGBps: 22.9},
		NCCL: []NCCLRow{{Bytes: 1 << 30, OOPBusBWGBps: 22.9}}, Info: Info{Nodes: 2}}
	roce, _ := ProfileNamed(ProfileRoCELossless)
	for nics, want := range map[int]Status{4: StatusFail, 2: StatusPass} {
		v := findVerdict(t, Judge(JudgeInput{Results: []Labelled{{Scenario: "rdma", Result: r}}, LineRateGbps: 100, NICs: nics,
			Thresholds: roce.Thresholds}), CheckNCCLBusBW, "rdma")
		if v.Status != want {
			t.Errorf("%d NICs: %+v, want %s", nics, v, want)
		}
	}
}
