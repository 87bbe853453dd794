package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loadNCCLDebug reads a testdata/nccldebug file without its "# SOURCE:"
// line (the format strings it was built from).
func loadNCCLDebug(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "nccldebug", name))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if !bytes.HasPrefix(first, []byte("# SOURCE:")) {
		t.Fatalf("%s: first line is not a # SOURCE: comment", name)
	}
	return rest
}

// info is one NCCL INFO line of host h as NCCL's debug.cc prints it:
// "%s:%d:%d " (host, pid, tid), then "[%d] NCCL INFO %s".
func info(h, msg string) string { return h + ":100:200 [0] NCCL INFO " + msg + "\n" }

func intp(v int) *int { return &v }

// A clean 2-node RoCE run of NCCL 2.21 (roce_2host_gdrdma_nccl2.21.txt,
// built from its format strings): every field, both hosts.
func TestNCCLDebugRoCE2HostsFromNCCL221FormatStrings(t *testing.T) {
	t.Parallel()
	r := ParseNCCLDebug(loadNCCLDebug(t, "roce_2host_gdrdma_nccl2.21.txt"))
	if !r.OK || r.Tool != ToolNCCLDebug || r.Rows() != 0 {
		t.Fatalf("tool %q ok %v error %q rows %d", r.Tool, r.OK, r.Error, r.Rows())
	}
	host := func(name, oob string) NCCLHost {
		return NCCLHost{Host: name, Networks: []string{"IB"}, OOB: oob,
			HCAs: []NCCLHCA{
				{Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "RoCE", GIDIndex: intp(3), MTU: 4096},
				{Index: 1, Name: "mlx5_1", Port: 1, LinkLayer: "RoCE", GIDIndex: intp(3), MTU: 4096},
			},
			GDR: []NCCLGDR{{Net: "IB", Index: 0, HCA: "mlx5_0", Enabled: true}, {Net: "IB", Index: 1, HCA: "mlx5_1", Enabled: true}},
			GDRPaths: []NCCLGDRPath{
				{GPU: "1b000", Index: 0, Enabled: true, Distance: "3 <= 4"},
				{GPU: "3d000", Index: 1, Enabled: true, Distance: "3 <= 4"},
			},
			NetChannels:   []NCCLNetChannels{{Net: "IB", Send: 2, SendGDRDMA: 2, Receive: 2, ReceiveGDRDMA: 2}},
			LocalChannels: 2,
			Env:           map[string]string{"NCCL_IB_GID_INDEX": "3"},
		}
	}
	want := &NCCLTransport{Version: "2.21.5+cuda12.4", Hosts: []NCCLHost{host("node-a", "eth0:10.0.0.1<0>"), host("node-b", "eth0:10.0.0.2<0>")}}
	if d := cmp.Diff(want, r.NCCLTransport); d != "" {
		t.Errorf("transport (-want +got):\n%s", d)
	}
	// Parse itself finds no benchmark in it, and says where to look.
	if p := Parse(loadNCCLDebug(t, "roce_2host_gdrdma_nccl2.21.txt")); p.OK || p.Tool != ToolUnknown ||
		!strings.Contains(p.Error, "--suite nccl-debug") || p.NCCLTransport == nil {
		t.Errorf("Parse: tool %q ok %v error %q", p.Tool, p.OK, p.Error)
	}
}

// Every message format, one line each, with where NCCL prints it (tag
// and file); lines quoted from public logs name their issue.
func TestNCCLDebugFormatsFromNCCLSource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		lines []string // messages of host "h"
		want  NCCLHost
	}{
		{"v2.6+ init.cc Using network, a plugin's name", []string{"Using network AWS Libfabric"},
			NCCLHost{Networks: []string{"AWS Libfabric"}}},
		{"v2.13+ net.cc Loaded net plugin (NVIDIA/nccl issue 1000)", []string{"NET/Plugin: Loaded net plugin NCCL RDMA Plugin (v5)"},
			NCCLHost{Plugins: []string{"NCCL RDMA Plugin"}}},
		{"v2.28+ plugin/net.cc Successfully loaded external network plugin", []string{"Successfully loaded external network plugin libnccl-net-ofi.so"},
			NCCLHost{Plugins: []string{"libnccl-net-ofi.so"}}},
		{"no plugin is no plugin", []string{"NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
			"Successfully loaded external tuner plugin libnccl-tuner.so"}, NCCLHost{}},
		{"v2.4+ net_ib No device found (NVIDIA/nccl issue 226)", []string{"NET/IB : No device found."}, NCCLHost{NoIBDevice: true}},
		{"v2.19+ ibvsymbols.cc Count not open", []string{"Count not open libibverbs.so.1"}, NCCLHost{NoVerbs: true}},
		{"to v2.18 ibvwrap.cc Failed to open libibverbs", []string{"Failed to open libibverbs.so[.1]"}, NCCLHost{NoVerbs: true}},
		{"v2.5 net_ib Using, HFI devices (NVIDIA/nccl issue 333)", []string{"NET/IB : Using [0]hfi1_0:1/IB [1]hfi1_1:1/IB ; OOB ib0:10.10.10.2<0>"},
			NCCLHost{OOB: "ib0:10.10.10.2<0>", HCAs: []NCCLHCA{{Index: 0, Name: "hfi1_0", Port: 1, LinkLayer: "IB"}, {Index: 1, Name: "hfi1_1", Port: 1, LinkLayer: "IB"}}}},
		{"v2.28+ net_ib/init.cc Using with rail and plane", []string{"NET/IB : Using [0]mlx5_0:1:0/IB [1]mlx5_1:1::1/IB [RO]; OOB ib0:10.0.0.1<0>"},
			NCCLHost{OOB: "ib0:10.0.0.1<0>", HCAs: []NCCLHCA{{Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "IB"}, {Index: 1, Name: "mlx5_1", Port: 1, LinkLayer: "IB"}}}},
		{"RDMA plugin Using with /SHARP (NVIDIA/nccl issue 1357)", []string{"NET/IB : Using [0]mlx5_0:1/IB/SHARP [RO]; OOB ibp25s0:10.20.0.119<0>"},
			NCCLHost{OOB: "ibp25s0:10.20.0.119<0>", HCAs: []NCCLHCA{{Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "IB"}}}},
		{"v2.3 net_ib.cu sideband interface is no device", []string{"NET/IB : Using interface ib0 for sideband communication"}, NCCLHost{}},
		{"v2.4+ net_socket.cc Using (NVIDIA/nccl issue 226)", []string{"NET/Socket : Using [0]ens3:172.31.10.182<0>"},
			NCCLHost{Socket: "[0]ens3:172.31.10.182<0>"}},
		{"v2.3 net_ib.cu GDR disabled for GPU / HCA name", []string{"NET/IB : GPU Direct RDMA Disabled for GPU 0 / HCA mlx5_0 (no module)"},
			NCCLHost{GDR: []NCCLGDR{{Net: "IB", Index: -1, HCA: "mlx5_0", GPU: "0", Reason: "no module"}}}},
		{"v2.5-2.12 net_ib.cc GDR disabled (no module) (NVIDIA/nccl issue 899)", []string{"NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_1' (no module)"},
			NCCLHost{GDR: []NCCLGDR{{Net: "IB", Index: 1, HCA: "mlx5_1", Reason: "no module"}}}},
		{"v2.13+ topo.cc GDR per HCA, no reason (NVIDIA/nccl issue 1537)", []string{"NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
			"NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'", "NET/IB : GPU Direct RDMA Enabled for HCA 1 'mlx5_1'"},
			NCCLHost{GDR: []NCCLGDR{{Net: "IB", Index: 0, HCA: "mlx5_0"}, {Net: "IB", Index: 1, HCA: "mlx5_1", Enabled: true}}}},
		{"v2.13+ topo.cc GDR of the socket transport (NVIDIA/nccl issue 1053)", []string{"NET/Socket : GPU Direct RDMA Disabled for HCA 0 'lo'"},
			NCCLHost{GDR: []NCCLGDR{{Net: "Socket", Index: 0, HCA: "lo"}}}},
		{"v2.13+ topo.cc GDR of a plugin with a space in its name", []string{"NET/AWS Libfabric : GPU Direct RDMA Enabled for HCA 0 'rdmap16s27'"},
			NCCLHost{GDR: []NCCLGDR{{Net: "AWS Libfabric", Index: 0, HCA: "rdmap16s27", Enabled: true}}}},
		{"v2.4 net_ib.cc GDR disabled for GPU[nvml] / HCA", []string{"NET/IB : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 'mlx5_0' (no module or not supported by GPU)"},
			NCCLHost{GDR: []NCCLGDR{{Net: "IB", Index: 0, HCA: "mlx5_0", GPU: "0", Reason: "no module or not supported by GPU"}}}},
		{"v2.4 net.cc GDR by distance", []string{"NET/IB : GPU Direct RDMA Disabled for GPU 0[0] / HCA 0 (distance 4 >= 2)"},
			NCCLHost{GDRPaths: []NCCLGDRPath{{GPU: "0", Index: 0, Distance: "4 >= 2"}}}},
		{"v2.6-2.18 paths.cc GDR by distance", []string{"GPU Direct RDMA Disabled for GPU 1b000 / HCA 1 (distance 6 > 4)"},
			NCCLHost{GDRPaths: []NCCLGDRPath{{GPU: "1b000", Index: 1, Distance: "6 > 4"}}}},
		{"v2.19-2.26 paths.cc HCA as a topology ID of system 1", []string{"GPU Direct RDMA Enabled for GPU 1b000 / HCA 100000000000003 (distance 3 <= 4), read 1"},
			NCCLHost{GDRPaths: []NCCLGDRPath{{GPU: "1b000", Index: 3, Enabled: true, Distance: "3 <= 4"}}}},
		{"v2.27-2.28 paths.cc GPU as rank, mode", []string{"GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 5), read 1 mode Default"},
			NCCLHost{GDRPaths: []NCCLGDRPath{{GPU: "0", Index: 0, Enabled: true, Distance: "4 <= 5"}}}},
		{"v2.3-2.18 net_ib.cc QP GID", []string{"NET/IB: Dev 0 Port 1 qpn 1234 mtu 3 GID 3 (0/FFFF0A000001)"},
			NCCLHost{HCAs: []NCCLHCA{{Index: 0, GIDIndex: intp(3), MTU: 1024}}}},
		{"v2.29.7+ net_ib/connect.cc QP GID with __func__ and qp_num", []string{"NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE; OOB eth0:10.0.0.1<0>",
			"NET/IB: ncclIbConnectImpl: NCCL Dev 1 IbDev 1 Port 1 qp_num 77 mtu 5 GID 3 (0/1064A8C0FFFF0000) ctsFifoRkey=0x1 ctsFifoLkey=0x1"},
			NCCLHost{OOB: "eth0:10.0.0.1<0>", HCAs: []NCCLHCA{{Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "RoCE"},
				{Index: 1, Name: "mlx5_1", Port: 1, LinkLayer: "RoCE", GIDIndex: intp(3), MTU: 4096}}}},
		{"v2.27 net_ib.cc IB QP line has a LID, no GID", []string{"NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 1250 mtu 5 LID 12 subnet-prefix 65152  FLID 0 fifoRkey=0x1f00 fifoLkey=0x1f00"},
			NCCLHost{}},
		{"param.cc and net_ib environment", []string{"NCCL_IB_GID_INDEX set by environment to 3.", "NCCL_IB_HCA set to mlx5",
			"NCCL_NET_GDR_LEVEL set by environment to PHB", "NCCL_IB_GID_INDEX set by environment to 5."},
			NCCLHost{Env: map[string]string{"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "mlx5", "NCCL_NET_GDR_LEVEL": "PHB"}}},
		{"v2.30.7+ net_ib/common.h ACS hint", []string{"HINT: In many cases this error occurs when ACS is enabled which would break GPU Direct RDMA protocol."},
			NCCLHost{Hints: []string{"In many cases this error occurs when ACS is enabled which would break GPU Direct RDMA protocol."}}},
		{"v2.12+ net.cc PXN proxy, PCI mode, shared", []string{"Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0(1)/GDRDMA(PCI)/Shared"},
			NCCLHost{NetChannels: []NCCLNetChannels{{Net: "IB", Send: 1, SendGDRDMA: 1}}}},
		{"v2.7-2.11 net.cc Channel without /N (NVIDIA/nccl issue 707)", []string{"Channel 02 : 3[ca000] -> 0[87000] [receive] via NET/IB/4/GDRDMA"},
			NCCLHost{NetChannels: []NCCLNetChannels{{Net: "IB", Receive: 1, ReceiveGDRDMA: 1}}}},
		{"RDMA plugin channel (NVIDIA/nccl issue 1814)", []string{"Channel 03/0 : 47[7] -> 39[7] [receive] via NET/IBext_v8/2"},
			NCCLHost{NetChannels: []NCCLNetChannels{{Net: "IBext_v8", Receive: 1}}}},
		{"a network name with a space", []string{"Channel 00/0 : 1[0] -> 0[0] [receive] via NET/AWS Libfabric/2/GDRDMA"},
			NCCLHost{NetChannels: []NCCLNetChannels{{Net: "AWS Libfabric", Receive: 1, ReceiveGDRDMA: 1}}}},
		{"v2.3 net.cu Ring without direction is a receive", []string{"Ring 00 : 1 -> 0 via NET/Socket/0"},
			NCCLHost{NetChannels: []NCCLNetChannels{{Net: "Socket", Receive: 1}}}},
		{"v2.6+ coll_net.cc CollNet", []string{"CollNet 00/0 : 0 [send] via COLLNET/SHARP/0/GDRDMA"},
			NCCLHost{NetChannels: []NCCLNetChannels{{Net: "CollNet/SHARP", Send: 1, SendGDRDMA: 1}}}},
		{"p2p.cc and shm.cc are intra-node (NVIDIA/nccl issue 1538)", []string{"Channel 04/0 : 0[0] -> 7[7] via P2P/CUMEM",
			"Channel 00 : 2[0] -> 3[1] via SHM/direct/direct", "Channel 00/1 : 0[0] -> 1[1] via P2P/indirect/2[2]"},
			NCCLHost{LocalChannels: 3}},
		{"ring order lines are no channels", []string{"Channel 00/32 :    0   1   2   3"}, NCCLHost{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			for _, l := range tc.lines {
				b.WriteString(info("h", l))
			}
			r := Parse([]byte(b.String()))
			if r.NCCLTransport == nil || len(r.NCCLTransport.Hosts) != 1 {
				t.Fatalf("transport %+v", r.NCCLTransport)
			}
			tc.want.Host = "h"
			if d := cmp.Diff(tc.want, r.NCCLTransport.Hosts[0]); d != "" {
				t.Errorf("host (-want +got):\n%s", d)
			}
		})
	}
}

// NCCL's debug.cc prefix "%s:%d:%d [%d] " after whatever a launcher or
// NCCL_DEBUG_TIMESTAMP_FORMAT put before it.
func TestNCCLLineHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, host string }{
		{"node-a:2101:2140 [0] NCCL INFO Using network IB", "node-a"},
		{"[1] node2:22555:22555 [0] NCCL INFO Using network IB", "node2"},                                                    // NVIDIA/nccl issue 1232
		{"(RayWorkerWrapper pid=2981, ip=169.254.28.198) spark-3995:2981:2981 [0] NCCL INFO Using network IB", "spark-3995"}, // mark-ramsey-ri/vllm-dgx-spark issue 1
		{"[2024-05-01 10:00:00] gpu-7:1:2 [3] NCCL INFO Using network IB", "gpu-7"},
		{"[1,0]<stdout>:hvd-0:811:840 [0] NCCL INFO Using network IB", "hvd-0"}, // the launcher tag is stripped first
		{"0:glued:1:2 [0] NCCL INFO Using network IB", "glued"},
		{"NCCL INFO Using network IB", ""},
		{"x:y:z [0] NCCL INFO Using network IB", ""},
		{"host:1:2 [a] NCCL INFO Using network IB", ""},
	} {
		r := Parse([]byte(tc.line + "\n"))
		if r.NCCLTransport == nil || len(r.NCCLTransport.Hosts) != 1 {
			t.Errorf("%q: transport %+v", tc.line, r.NCCLTransport)
			continue
		}
		if got := r.NCCLTransport.Hosts[0].Host; got != tc.host {
			t.Errorf("%q: host %q, want %q", tc.line, got, tc.host)
		}
	}
}

// nccl-tests output with NCCL INFO lines between its table rows (a merged
// mpirun stdout/stderr): the rows are all there, and so is the transport.
func TestNCCLDebugBetweenNCCLTestsRowsKeepsRows(t *testing.T) {
	t.Parallel()
	r := Parse(loadNCCLDebug(t, "ib_2host_nccl-tests_info_between_rows_nccl2.27.txt"))
	if !r.OK || r.Kind != KindNCCL || len(r.NCCL) != 4 {
		t.Fatalf("kind %q ok %v error %q rows %d", r.Kind, r.OK, r.Error, len(r.NCCL))
	}
	if d := cmp.Diff([]int64{8, 1048576, 33554432, 134217728}, rowBytes(r)); d != "" {
		t.Errorf("row sizes (-want +got):\n%s", d)
	}
	if got := r.Summary[SumMaxBusBWGBps]; !near(got, 23.93) {
		t.Errorf("peak busbw %g", got)
	}
	tr := r.NCCLTransport
	if tr == nil || tr.Version != "2.27.3+cuda12.9" || len(tr.Hosts) != 2 {
		t.Fatalf("transport %+v", tr)
	}
	for _, h := range tr.Hosts {
		want := []NCCLNetChannels{{Net: "IB", Send: 2, SendGDRDMA: 2, Receive: 2, ReceiveGDRDMA: 2}}
		if d := cmp.Diff(want, h.NetChannels); d != "" {
			t.Errorf("%s channels (-want +got):\n%s", h.Host, d)
		}
	}
	// The same with ParseNCCL (--suite nccl).
	if n := ParseNCCL(loadNCCLDebug(t, "ib_2host_nccl-tests_info_between_rows_nccl2.27.txt")); len(n.NCCL) != 4 || n.NCCLTransport == nil {
		t.Errorf("ParseNCCL: rows %d transport %v", len(n.NCCL), n.NCCLTransport != nil)
	}
}

func rowBytes(r Result) []int64 {
	var out []int64
	for _, row := range r.NCCL {
		out = append(out, row.Bytes)
	}
	return out
}

// A Horovod training log under mpirun --tag-output with the RDMA
// plugin's lines: the training result, and the transport beside it.
func TestNCCLDebugInTrainingLog(t *testing.T) {
	t.Parallel()
	r := Parse(loadNCCLDebug(t, "horovod_training_ibext_plugin_nccl2.21.txt"))
	if !r.OK || r.Kind != KindTraining || !near(r.Summary[SumTotalThroughput], 782.7) {
		t.Fatalf("kind %q ok %v error %q summary %v", r.Kind, r.OK, r.Error, r.Summary)
	}
	if r.NCCLTransport == nil || len(r.NCCLTransport.Hosts) != 2 {
		t.Fatalf("transport %+v", r.NCCLTransport)
	}
	h := r.NCCLTransport.Hosts[1]
	got := fmt.Sprint(h.Host, h.Networks, h.Plugins, h.NetChannels)
	if want := "hvd-1[IBext_v7] [NCCL RDMA Plugin v7] [{IBext_v7 1 1 1 1}]"; got != want {
		t.Errorf("host = %s, want %s", got, want)
	}
}

// NCCL 2.4's formats: "Ring" lines, the bare version line, GDR per GPU.
func TestNCCLDebugNCCL24RingFormats(t *testing.T) {
	t.Parallel()
	tr := ParseNCCLDebug(loadNCCLDebug(t, "old_ring_formats_nccl2.4.txt")).NCCLTransport
	if tr == nil || tr.Version != "2.4.7+cuda10.0" || len(tr.Hosts) != 2 {
		t.Fatalf("transport %+v", tr)
	}
	a := tr.Hosts[0]
	want := NCCLHost{Host: "old-a", OOB: "ib0:192.168.11.1<0>", HCAs: []NCCLHCA{{Index: 0, Name: "mlx5_0", Port: 1, LinkLayer: "IB"}},
		GDR:         []NCCLGDR{{Net: "IB", Index: 0, HCA: "mlx5_0", GPU: "0", Reason: "no module or not supported by GPU"}},
		NetChannels: []NCCLNetChannels{{Net: "IB", Send: 1, Receive: 1}}, LocalChannels: 1, Env: map[string]string{"NCCL_IB_DISABLE": "0"}}
	if d := cmp.Diff(want, a); d != "" {
		t.Errorf("old-a (-want +got):\n%s", d)
	}
}

// A log cut off mid-line: the last line, without its newline, is never
// read (as table rows are not); the complete lines are.
func TestNCCLDebugTruncatedLogDropsCutLine(t *testing.T) {
	t.Parallel()
	full := loadNCCLDebug(t, "socket_fallback_no_ib_device_nccl2.19.txt")
	i := bytes.Index(full, []byte("pod-1:68:90 [0] NCCL INFO Using network Socket"))
	if i < 0 {
		t.Fatal("no pod-1 network line")
	}
	cut := full[:i+len("pod-1:68:90 [0] NCCL INFO Using network Sock")]
	tr := ParseNCCLDebug(cut).NCCLTransport
	if tr == nil || len(tr.Hosts) != 2 {
		t.Fatalf("transport %+v", tr)
	}
	if got := tr.Hosts[0].Networks; len(got) != 1 || got[0] != "Socket" {
		t.Errorf("pod-0 networks %v", got)
	}
	if got := tr.Hosts[1]; len(got.Networks) != 0 || len(got.NetChannels) != 0 || !got.NoIBDevice {
		t.Errorf("pod-1 = %+v: the cut line and what follows it must not count", got)
	}
	// Cut inside the first INFO line: no complete INFO line, no transport.
	if r := ParseNCCLDebug([]byte("pod-0:71:92 [0] NCCL INFO Using net")); r.OK || r.NCCLTransport != nil {
		t.Errorf("cut first line: ok %v transport %+v", r.OK, r.NCCLTransport)
	}
}

// interleavedJob is an NCCL INFO log of hosts x 8 ranks, every rank's
// lines interleaved with every other's (line i of each rank in turn), as
// a collector merges thousands of ranks; some ranks carry launcher
// prefixes.
func interleavedJob(hosts, channels int) []byte {
	var b bytes.Buffer
	const ranks = 8
	nranks := hosts * ranks
	for step := 0; step < 3+2*channels; step++ {
		for h := 0; h < hosts; h++ {
			for d := 0; d < ranks; d++ {
				prefix := ""
				if d%3 == 1 {
					prefix = fmt.Sprintf("[1,%d]<stderr>:", h*ranks+d)
				}
				rank := h*ranks + d
				line := fmt.Sprintf("%snode-%04d:%d:%d [%d] NCCL INFO ", prefix, h, 1000+d, 2000+d, d)
				switch {
				case step == 0:
					line += "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [2]mlx5_2:1/RoCE [3]mlx5_3:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
				case step == 1:
					line += "Using network IB"
				case step == 2:
					line += fmt.Sprintf("NET/IB : GPU Direct RDMA Enabled for HCA %d 'mlx5_%d'", d%4, d%4)
				case step%2 == 1:
					line += fmt.Sprintf("Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA", step/2-1, rank, d, (rank+ranks)%nranks, d, d%4)
				default:
					line += fmt.Sprintf("Channel %02d/0 : %d[%d] -> %d[%d] [receive] via NET/IB/%d/GDRDMA", step/2-1, (rank+nranks-ranks)%nranks, d, rank, d, d%4)
				}
				b.WriteString(line + "\n")
			}
		}
	}
	return b.Bytes()
}

// 512 hosts x 8 ranks x 16 channels interleaved line by line: every host
// is found with all its channels, and the job passes.
func TestNCCLDebugThousandsOfRanksInterleaved(t *testing.T) {
	t.Parallel()
	r := ParseNCCLDebug(interleavedJob(512, 16))
	tr := r.NCCLTransport
	if tr == nil || len(tr.Hosts) != 512 || tr.Capped {
		t.Fatalf("hosts %d capped %v", len(tr.Hosts), tr.Capped)
	}
	for _, h := range []NCCLHost{tr.Hosts[0], tr.Hosts[511]} {
		want := []NCCLNetChannels{{Net: "IB", Send: 8 * 16, SendGDRDMA: 8 * 16, Receive: 8 * 16, ReceiveGDRDMA: 8 * 16}}
		if d := cmp.Diff(want, h.NetChannels); d != "" || len(h.HCAs) != 4 || len(h.GDR) != 4 {
			t.Errorf("%s: hcas %d gdr %d channels (-want +got):\n%s", h.Host, len(h.HCAs), len(h.GDR), d)
		}
	}
	var got []string
	for _, v := range NCCLTransportVerdicts(JudgeInput{Profile: ProfileRoCELossless}, Labelled{Scenario: "rdma", Result: r}) {
		got = append(got, v.Check+" "+string(v.Status))
	}
	if d := cmp.Diff([]string{"nccl-network pass", "nccl-gdr pass", "nccl-hosts pass"}, got); d != "" {
		t.Errorf("verdicts (-want +got):\n%s", d)
	}
}

// Past maxNCCLHosts hosts the rest is not read, and the transport says so.
func TestNCCLDebugHostsAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for h := 0; h < maxNCCLHosts+10; h++ {
		b.WriteString(info(fmt.Sprintf("n%d", h), "Using network IB"))
	}
	tr := ParseNCCLDebug([]byte(b.String())).NCCLTransport
	if tr == nil || len(tr.Hosts) != maxNCCLHosts || !tr.Capped {
		t.Errorf("hosts %d capped %v", len(tr.Hosts), tr.Capped)
	}
}

// A line of any length and lists of any size stay bounded: NCCL's own
// lines are under 1024 bytes.
func TestNCCLDebugLinesAndListsAreBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("h:1:2 [0] NCCL INFO NET/IB : Using")
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&b, " [%d]mlx5_%d:1/RoCE", i, i)
	}
	b.WriteString("; OOB eth0:10.0.0.1<0>\n")
	b.WriteString(info("h", "Using network "+strings.Repeat("x", 10000)))
	for i := 0; i < 300; i++ {
		b.WriteString(info("h", fmt.Sprintf("NCCL_V%d set by environment to 1.", i)))
		b.WriteString(info("h", fmt.Sprintf("HINT: hint %d", i)))
		b.WriteString(info("h", fmt.Sprintf("Using network N%d", i)))
		b.WriteString(info("h", fmt.Sprintf("NET/IB : GPU Direct RDMA Disabled for HCA %d 'd%d'", i, i)))
		b.WriteString(info("h", fmt.Sprintf("GPU Direct RDMA Disabled for GPU %x / HCA %d (distance 6 > 4)", i, i)))
		b.WriteString(info("h", fmt.Sprintf("Channel 00/0 : 0[0] -> 1[0] [send] via NET/N%d/0", i)))
	}
	tr := ParseNCCLDebug([]byte(b.String())).NCCLTransport
	h := tr.Hosts[0]
	if len(h.HCAs) > maxNCCLHCAs || len(h.Env) != maxNCCLEnv || len(h.Hints) != maxNCCLHints || len(h.Networks) != maxNCCLList ||
		len(h.GDR) != maxNCCLGDR || len(h.GDRPaths) != maxNCCLGDRPaths || len(h.NetChannels) != maxNCCLList {
		t.Errorf("hcas %d env %d hints %d networks %d gdr %d paths %d nets %d", len(h.HCAs), len(h.Env), len(h.Hints),
			len(h.Networks), len(h.GDR), len(h.GDRPaths), len(h.NetChannels))
	}
	for _, n := range h.Networks {
		if len(n) > maxNCCLName {
			t.Errorf("network name of %d bytes", len(n))
		}
	}
}

// The JSON contract: "ncclTransport" is there when INFO lines were, reads
// back the same, and is absent otherwise.
func TestNCCLTransportJSON(t *testing.T) {
	t.Parallel()
	r := Parse(loadNCCLDebug(t, "ib_2host_nccl-tests_info_between_rows_nccl2.27.txt"))
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"ncclTransport":{"version":"2.27.3+cuda12.9","hosts":[{"host":"ib-0","networks":["IB"]`)) {
		t.Errorf("JSON lacks ncclTransport: %s", data)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r.NCCLTransport, back.NCCLTransport); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	plain, err := json.Marshal(Parse(loadVector(t, ncclIBVector)))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("ncclTransport")) {
		t.Errorf("no INFO lines, yet: %s", plain)
	}
}

// FuzzNCCLDebug: any input parses without panicking, within the bounds,
// and its verdicts and JSON never fail.
func FuzzNCCLDebug(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "nccldebug", "*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("seeds: %v", err)
	}
	for _, name := range files {
		f.Add(loadNCCLDebug(f, filepath.Base(name)))
	}
	f.Add([]byte("h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0(1)/GDRDMA(PCI)/Shared\n"))
	f.Add([]byte("h:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU ffffffffffffffff / HCA ffffffffffffffffff (distance 1 <= 2)\n"))
	f.Add(interleavedJob(3, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := ParseNCCLDebug(data)
		if r.OK != (r.NCCLTransport != nil) {
			t.Fatalf("ok %v with transport %v", r.OK, r.NCCLTransport != nil)
		}
		checkInvariants(t, r)
		checkInvariants(t, Parse(data))
		tr := r.NCCLTransport
		if tr == nil {
			return
		}
		if len(tr.Hosts) > maxNCCLHosts {
			t.Fatalf("%d hosts", len(tr.Hosts))
		}
		for _, h := range tr.Hosts {
			if len(h.Host) > maxNCCLName || len(h.HCAs) > maxNCCLHCAs || len(h.GDR) > maxNCCLGDR || len(h.GDRPaths) > maxNCCLGDRPaths ||
				len(h.Networks) > maxNCCLList || len(h.NetChannels) > maxNCCLList || len(h.Env) > maxNCCLEnv || len(h.Hints) > maxNCCLHints {
				t.Fatalf("host %q over its bounds", h.Host)
			}
		}
		for _, p := range []string{"", ProfileRoCELossless, ProfileCloud} {
			for _, v := range NCCLTransportVerdicts(JudgeInput{Profile: p, NearHCAs: map[string]bool{"mlx5_0": true}}, Labelled{Scenario: "rdma", Result: r}) {
				if v.Reason == "" || v.Status == "" {
					t.Fatalf("verdict %+v", v)
				}
			}
		}
	})
}

// BenchmarkParseNCCLDebugInterleaved reads 512 hosts x 8 ranks x 16
// channels of INFO lines (about 150,000 lines), interleaved.
func BenchmarkParseNCCLDebugInterleaved(b *testing.B) {
	data := interleavedJob(512, 16)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if r := ParseNCCLDebug(data); !r.OK || len(r.NCCLTransport.Hosts) != 512 {
			b.Fatalf("ok %v", r.OK)
		}
	}
}
