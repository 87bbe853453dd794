package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkStatuses is "check status" of every verdict.
func checkStatuses(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Check+" "+string(v.Status))
	}
	return out
}

// One table row per verdict of the NCCL transport checks, on the
// testdata/nccldebug logs (each built from NCCL's format strings).
func TestNCCLTransportVerdictTable(t *testing.T) {
	t.Parallel()
	const (
		socketLog = "socket_fallback_no_ib_device_nccl2.19.txt"
		gdrLog    = "gdr_disabled_hca5_nccl2.18.txt"
		hostsLog  = "host_without_gdrdma_nccl2.12.txt"
	)
	for _, tc := range []struct {
		name     string
		log      string
		in       JudgeInput
		scenario string
		want     []string
		// reasons holds, per verdict index, a substring of its reason.
		reasons map[int]string
	}{
		{
			name: "socket fallback fails under roce-lossless", log: socketLog, in: JudgeInput{Profile: ProfileRoCELossless}, scenario: "job",
			want:    []string{"nccl-network fail"},
			reasons: map[int]string{0: "NCCL fell back to TCP sockets (NET/Socket) on pod-0, pod-1; check first: NET/Socket: NCCL found no usable IB device: check /dev/infiniband in the pod"},
		},
		{
			name: "socket fallback fails under infiniband", log: socketLog, in: JudgeInput{Profile: ProfileInfiniBand}, scenario: "job",
			want: []string{"nccl-network fail"},
		},
		{
			name: "socket fallback fails in bench plan's rdma scenario", log: socketLog, scenario: "rdma",
			want: []string{"nccl-network fail"},
		},
		{
			name: "socket fallback warns without a profile", log: socketLog, scenario: "job",
			want: []string{"nccl-network warn"}, reasons: map[int]string{0: "give the fabric (--profile)"},
		},
		{
			name: "socket fallback warns under cloud, which may have no RDMA", log: socketLog, in: JudgeInput{Profile: ProfileCloud}, scenario: "job",
			want: []string{"nccl-network warn"},
		},
		{
			name: "socket fallback is info in the tcp scenario", log: socketLog, in: JudgeInput{Profile: ProfileRoCELossless}, scenario: "tcp",
			want: []string{"nccl-network info"}, reasons: map[int]string{0: "TCP scenario, sockets expected"},
		},
		{
			name: "GDR disabled on one HCA warns without a topology", log: gdrLog, scenario: "rdma",
			want: []string{"nccl-network pass", "nccl-gdr warn", "nccl-gdr pass", "nccl-hosts pass"},
			reasons: map[int]string{1: "GPUDirect RDMA disabled for HCA mlx5_5 on gdr-a, gdr-b; give the topology (--sysfs or --machine)",
				2: "GDRDMA) on 4 of 4 inter-node channels"},
		},
		{
			name: "GDR disabled on one HCA fails when a GPU is near it", log: gdrLog, scenario: "rdma",
			in:      JudgeInput{NearHCAs: map[string]bool{"mlx5_0": true, "mlx5_5": true}},
			want:    []string{"nccl-network pass", "nccl-gdr fail", "nccl-gdr pass", "nccl-hosts pass"},
			reasons: map[int]string{1: "a GPU is near it (PIX or PXB): its traffic is staged through host memory; check first: NCCL found neither nvidia-peermem"},
		},
		{
			name: "GDR disabled on an HCA no GPU is near is info", log: gdrLog, scenario: "rdma",
			in:   JudgeInput{NearHCAs: map[string]bool{"mlx5_5": false}},
			want: []string{"nccl-network pass", "nccl-gdr info", "nccl-gdr pass", "nccl-hosts pass"},
		},
		{
			name: "one host's channels without GDRDMA warn naming the host", log: hostsLog, scenario: "rdma",
			want: []string{"nccl-network pass", "nccl-gdr warn", "nccl-gdr warn", "nccl-hosts warn"},
			reasons: map[int]string{1: "HCA mlx5_0 on gpu-b (NCCL: no module); give the topology (--sysfs or --machine) to say whether a GPU is near it; " +
				"check first: GDR disabled (no module): load nvidia-peermem",
				3: "hosts differ in GPUDirect RDMA on inter-node channels: gpu-a: GDRDMA on every receive channel; gpu-b: no GDRDMA"},
		},
		{
			name: "hosts on different RoCE GID indexes warn", log: "gid_index_differs_nccl2.23.txt", scenario: "rdma",
			in:      JudgeInput{Profile: ProfileRoCELossless},
			want:    []string{"nccl-network pass", "nccl-gdr pass", "nccl-hosts warn"},
			reasons: map[int]string{2: "hosts differ in RoCE GID index: roce-a: GID index 3; roce-b: GID index 5; check first: both ends need the same GID type"},
		},
		{
			name: "a clean RoCE run with GDRDMA on every inter-node channel passes", log: "roce_2host_gdrdma_nccl2.21.txt", scenario: "rdma",
			in:   JudgeInput{Profile: ProfileRoCELossless, NearHCAs: map[string]bool{"mlx5_0": true, "mlx5_1": true}},
			want: []string{"nccl-network pass", "nccl-gdr pass", "nccl-hosts pass"},
			reasons: map[int]string{0: "NCCL used IB on 2 hosts (8 channels through the network)",
				2: "2 hosts agree: GDRDMA on every receive channel; HCAs: 2 x RoCE; GID index 3; MTU 4096"},
		},
		{
			name: "a clean InfiniBand run with GDRDMA on every inter-node channel passes", log: "ib_2host_nccl-tests_info_between_rows_nccl2.27.txt",
			scenario: "rdma", in: JudgeInput{Profile: ProfileInfiniBand},
			want: []string{"nccl-network pass", "nccl-gdr pass", "nccl-hosts pass"},
		},
		{
			name: "the RDMA plugin is RDMA", log: "horovod_training_ibext_plugin_nccl2.21.txt", scenario: "rdma", in: JudgeInput{Profile: ProfileInfiniBand},
			want: []string{"nccl-network pass", "nccl-gdr pass", "nccl-hosts pass"}, reasons: map[int]string{0: "NCCL used IBext_v7"},
		},
		{
			name: "NCCL 2.4 without nv_peer_mem: every HCA and the channels", log: "old_ring_formats_nccl2.4.txt", scenario: "rdma",
			want: []string{"nccl-network pass", "nccl-gdr warn", "nccl-gdr warn", "nccl-hosts pass"},
			reasons: map[int]string{1: "(NCCL: no module or not supported by GPU)",
				2: "no inter-node channel carries GPUDirect RDMA (0 of 4): GPU memory is staged through host memory; the HCAs above have no GPUDirect RDMA"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ParseNCCLDebug(loadNCCLDebug(t, tc.log))
			vs := NCCLTransportVerdicts(tc.in, Labelled{Scenario: tc.scenario, Result: r})
			if d := cmp.Diff(tc.want, checkStatuses(vs)); d != "" {
				t.Fatalf("verdicts (-want +got):\n%s\n%+v", d, vs)
			}
			for i, sub := range tc.reasons {
				if !strings.Contains(vs[i].Reason, sub) {
					t.Errorf("verdict %d reason %q lacks %q", i, vs[i].Reason, sub)
				}
			}
			for _, v := range vs {
				if v.Scenario != tc.scenario || v.Tool != ToolNCCLDebug {
					t.Errorf("verdict %+v: scenario or tool", v)
				}
			}
		})
	}
}

// The whole socket verdict, as bench report prints it.
func TestNCCLSocketFallbackVerdict(t *testing.T) {
	t.Parallel()
	r := ParseNCCLDebug(loadNCCLDebug(t, "socket_fallback_no_ib_device_nccl2.19.txt"))
	got := NCCLTransportVerdicts(JudgeInput{Profile: ProfileRoCELossless}, Labelled{Scenario: "rdma", Result: r})
	want := []Verdict{{Check: CheckNCCLNetwork, Scenario: "rdma", Tool: ToolNCCLDebug, Status: StatusFail,
		Reason: "NCCL fell back to TCP sockets (NET/Socket) on pod-0, pod-1; check first: NET/Socket: NCCL found no usable IB device: " +
			"check /dev/infiniband in the pod (its uverbs device and rdma_cm), that its RDMA device is in the pod's network namespace, and NCCL_IB_HCA"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("verdicts (-want +got):\n%s", d)
	}
}

// What the lines say decides what to check first: one log per cause, and
// hosts of different causes named with theirs.
func TestNCCLSocketCauses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, log, reason string
	}{
		{"NCCL_IB_DISABLE (NVIDIA/nccl-tests issue 188)", info("a", "NCCL_IB_DISABLE set by environment to 1.") + info("a", "Using network Socket"),
			"check first: NCCL_IB_DISABLE=1 is set: unset it"},
		{"libibverbs missing", info("a", "Count not open libibverbs.so.1") + info("a", "Using network Socket"), "install rdma-core's libibverbs"},
		{"IB listed, sockets chosen", info("a", "NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>") + info("a", "Using network Socket"),
			"NCCL listed IB devices and still chose sockets"},
		{"no IB line at all", info("a", "Using network Socket"), "NCCL printed no NET/IB line"},
		{"hosts of two causes, one on IB", info("a", "NET/IB : No device found.") + info("a", "Using network Socket") +
			info("b", "NCCL_IB_DISABLE set by environment to 1.") + info("b", "Using network Socket") + info("c", "Using network IB"),
			"on a, b (2 of the 3 hosts that name their network); check first: NCCL_IB_DISABLE=1 is set: unset it (b); check first: NET/Socket: NCCL found no usable IB device"},
	} {
		vs := NCCLTransportVerdicts(JudgeInput{Profile: ProfileInfiniBand}, Labelled{Result: ParseNCCLDebug([]byte(tc.log))})
		if len(vs) == 0 || vs[0].Status != StatusFail || !strings.Contains(vs[0].Reason, tc.reason) {
			t.Errorf("%s: %+v, want fail with %q", tc.name, vs, tc.reason)
		}
	}
}

// Findings beyond the logs of the table: a one-host run, NCCL's hints,
// GPUDirect RDMA off by distance, GDRDMA on some channels of a host, an
// unknown network, and lines that say nothing about the network.
func TestNCCLTransportOtherFindings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		log    string
		in     JudgeInput
		want   []string
		reason string // of the last verdict
	}{
		{"all channels inside one host", info("a", "Using network IB") + info("a", "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"),
			JudgeInput{}, []string{"nccl-network info"}, "all 1 channels stayed inside a host (P2P, SHM): the network was not tested"},
		{"ACS hint", info("a", "Using network IB") + info("a", "HINT: In many cases this error occurs when ACS is enabled which would break GPU Direct RDMA protocol."),
			JudgeInput{}, []string{"nccl-network pass", "nccl-gdr warn"}, "check ACS on the PCIe switches between GPU and NIC first (disable it in the BIOS or with setpci); NCCL_NET_GDR_LEVEL=LOC confirms it (on a)"},
		{"GID index hint", info("a", "Using network IB") + info("a", "HINT: In many cases this error occurs when the incorrect GID index is forced by NCCL_IB_GID_INDEX"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-network warn"}, "wrong NCCL_IB_GID_INDEX"},
		{"GDR off by distance everywhere", info("a", "Using network IB") + info("a", "NET/IB : Using [0]mlx5_0:1/RoCE; OOB eth0:1<0>") +
			info("a", "GPU Direct RDMA Disabled for GPU 1b000 / HCA 0 (distance 6 > 4)") +
			info("a", "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-gdr warn"},
			"check first: NCCL finds GPUs too far from their NIC (GPU 1b000 and HCA mlx5_0 on a: distance 6 > 4, beyond NCCL_NET_GDR_LEVEL"},
		{"GDR off everywhere, no GPU near any HCA", info("a", "Using network IB") + info("a", "NET/IB : Using [0]mlx5_0:1/RoCE; OOB eth0:1<0>") +
			info("a", "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0"),
			JudgeInput{NearHCAs: map[string]bool{"mlx5_0": false}}, []string{"nccl-network pass", "nccl-gdr info"}, "expected"},
		{"NCCL_NET_GDR_LEVEL set", info("a", "Using network IB") + info("a", "NCCL_NET_GDR_LEVEL set by environment to LOC") +
			info("a", "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-gdr warn"}, "check first: NCCL_NET_GDR_LEVEL=LOC is set on a"},
		{"GDRDMA on some receive channels of a host", info("a", "Using network IB") +
			info("a", "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA") + info("a", "Channel 01/0 : 1[1] -> 0[1] [receive] via NET/IB/1"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-gdr warn"}, "GPUDirect RDMA on only some inter-node receive channels of a"},
		{"sends without GDRDMA pass (GDR read)", info("a", "Using network IB") +
			info("a", "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA") + info("a", "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-gdr pass"}, "NCCL reads GPU memory for sends only from Ampere on"},
		{"an unknown network is not judged", info("a", "Using network Mystery") + info("a", "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Mystery/0"),
			JudgeInput{Profile: ProfileInfiniBand}, []string{"nccl-network info", "nccl-gdr warn"}, "no inter-node channel carries GPUDirect RDMA"},
		{"lines that say nothing about the network", info("a", "proxy.cc:698 -> 6") + info("a", "[Service thread] Connection closed by localRank 0"),
			JudgeInput{Profile: ProfileInfiniBand}, nil, ""},
		{"hosts of different HCA counts", info("a", "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE; OOB e<0>") +
			info("b", "NET/IB : Using [0]mlx5_0:1/RoCE; OOB e<0>") + info("a", "Using network IB") + info("b", "Using network IB"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-hosts warn", "nccl-hosts info"}, "hosts differ in HCA names: a: mlx5_0 mlx5_1; b: mlx5_0"},
		{"VF names differ, counts agree", info("a", "NET/IB : Using [0]mlx5_12:1/RoCE; OOB e<0>") +
			info("b", "NET/IB : Using [0]mlx5_15:1/RoCE; OOB e<0>") + info("a", "Using network IB") + info("b", "Using network IB"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-hosts info", "nccl-hosts pass"}, "2 hosts agree: HCAs: 1 x RoCE"},
		{"hosts of different MTUs", info("a", "NET/IB: Dev 0 Port 1 qpn 1 mtu 3 GID 3 (0/1)") + info("b", "NET/IB: Dev 0 Port 1 qpn 1 mtu 5 GID 3 (0/1)") +
			info("a", "Using network IB") + info("b", "Using network IB"),
			JudgeInput{}, []string{"nccl-network pass", "nccl-hosts warn"}, "hosts differ in MTU: a: MTU 1024; b: MTU 4096"},
	} {
		vs := NCCLTransportVerdicts(tc.in, Labelled{Result: ParseNCCLDebug([]byte(tc.log))})
		if d := cmp.Diff(tc.want, checkStatuses(vs)); d != "" {
			t.Errorf("%s: verdicts (-want +got):\n%s\n%+v", tc.name, d, vs)
			continue
		}
		if len(vs) > 0 && !strings.Contains(vs[len(vs)-1].Reason, tc.reason) {
			t.Errorf("%s: reason %q lacks %q", tc.name, vs[len(vs)-1].Reason, tc.reason)
		}
	}
}

// Judge judges the NCCL lines of every result, a failed run's too: a
// crashed job's log still says which network it was on.
func TestJudgeIncludesNCCLTransport(t *testing.T) {
	t.Parallel()
	ok := Parse(loadNCCLDebug(t, "ib_2host_nccl-tests_info_between_rows_nccl2.27.txt"))
	failed := Parse(append(loadNCCLDebug(t, "socket_fallback_no_ib_device_nccl2.19.txt"),
		[]byte("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"+
			"pod-0: Test NCCL failure common.cu:1005 'remote process exited or there was a network error'\n")...))
	if failed.OK || failed.NCCLTransport == nil {
		t.Fatalf("failed run: ok %v transport %v", failed.OK, failed.NCCLTransport != nil)
	}
	vs := Judge(JudgeInput{Profile: ProfileInfiniBand, Results: []Labelled{{Scenario: "rdma", Result: ok}, {Scenario: "rdma2", Result: failed}}})
	got := seedVerdicts(vs, CheckRun, CheckNCCLBusBW, CheckNCCLNetwork, CheckNCCLGDR, CheckNCCLHosts)
	want := []string{"nccl-busbw rdma skip", "nccl-network rdma pass", "nccl-gdr rdma pass", "nccl-hosts rdma pass",
		"run rdma2 fail", "nccl-network rdma2 fail"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("verdicts (-want +got):\n%s", d)
	}
}

// The profiles that expect RDMA are the RDMA fabrics'.
func TestProfilesExpectRDMA(t *testing.T) {
	t.Parallel()
	got := map[string]bool{}
	for _, p := range Profiles {
		got[p.Name] = p.RDMA
	}
	want := map[string]bool{ProfileInfiniBand: true, ProfileRoCELossless: true, ProfileRoCELossy: true, ProfileCloud: false, ProfileVirtual: false}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("RDMA per profile (-want +got):\n%s", d)
	}
}

// The worst a log can hold (every host at its bounds, every name and
// reason distinct) gives a bounded number of verdicts of bounded length.
func TestNCCLTransportVerdictsAreBounded(t *testing.T) {
	t.Parallel()
	tr := &NCCLTransport{}
	for h := 0; h < maxNCCLHosts; h++ {
		host := NCCLHost{Host: fmt.Sprintf("node-%d", h), Networks: []string{"IB"},
			NetChannels: []NCCLNetChannels{{Net: "IB", Receive: 2, ReceiveGDRDMA: h % 3}}}
		for i := 0; i < maxNCCLGDR; i++ {
			name := fmt.Sprintf("mlx5_%d_%d", h, i)
			host.HCAs = append(host.HCAs, NCCLHCA{Index: i, Name: name, LinkLayer: "RoCE", GIDIndex: intp(h), MTU: 1024 << (h % 3)})
			host.GDR = append(host.GDR, NCCLGDR{Net: "IB", Index: i, HCA: name, Reason: fmt.Sprintf("reason %d", h)})
		}
		tr.Hosts = append(tr.Hosts, host)
	}
	vs := NCCLTransportVerdicts(JudgeInput{}, Labelled{Scenario: "rdma", Result: Result{Tool: ToolNCCLDebug, OK: true, NCCLTransport: tr}})
	if len(vs) > maxGDRVerdicts+len(ncclHostRules)+4 {
		t.Errorf("%d verdicts", len(vs))
	}
	for _, v := range vs {
		if len(v.Reason) > 4096 {
			t.Errorf("%s reason of %d bytes", v.Check, len(v.Reason))
		}
	}
}
