package ibneighbor_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/ibneighbor"
	"github.com/railyard-io/railyard/internal/ibneighbor/ibneighbortest"
)

// The outputs below are hand-written to smpquery's format as
// rdma-core's source prints it (no InfiniBand subnet here to record one
// from): infiniband-diags/smpquery.c node_info() and node_desc(),
// libibmad/dump.c _dump_fields() and its value dumpers, libibmad/fields.c
// _mad_dump_field() and its NodeInfo and PortInfo tables (parse.go
// describes them). The values are a Quantum (HDR) switch's and a
// ConnectX-6's.

// smpquery -C mlx5_0 -P 1 -D nodeinfo 0,1, cabled to switch port 17.
const switchNodeInfo = `# Node info: DR path slid 65535; dlid 65535; 0,1
BaseVers:........................1
ClassVers:.......................1
NodeType:........................Switch
NumPorts:........................41
SystemGuid:......................0x0002c9030000abcd
Guid:............................0x0002c9030000abcd
PortGuid:........................0x0002c9030000abcd
PartCap:.........................8
DevId:...........................0xcf08
Revision:........................0x000000a0
LocalPort:.......................17
VendorId:........................0x0002c9
`

// The same over a back-to-back cable: another host's ConnectX-6.
const caNodeInfo = `# Node info: DR path slid 65535; dlid 65535; 0,1
BaseVers:........................1
ClassVers:.......................1
NodeType:........................Channel Adapter
NumPorts:........................1
SystemGuid:......................0xb83fd20300a1b2c4
Guid:............................0xb83fd20300a1b2c4
PortGuid:........................0xb83fd20300a1b2c4
PartCap:.........................128
DevId:...........................0x101b
Revision:........................0x00000000
LocalPort:.......................1
VendorId:........................0x0002c9
`

// smpquery -D nodedesc 0,1 of a managed switch, of a host (back to back)
// and of an unnamed switch (its vendor default, shared by every such one).
const (
	switchNodeDesc  = "Node Description:......MF0;leaf-r3-su1:MQM8700/U1\n"
	hostNodeDesc    = "Node Description:...............gpu-node-8 mlx5_0\n"
	defaultNodeDesc = "Node Description:...Quantum Mellanox Technologies\n"
)

// smpquery -D portinfo 0 1 of a local port without a cable (cut after the
// link states: the parser needs no more).
const downPortInfo = `# Port info: DR path slid 65535; dlid 65535; 0 port 1
Mkey:............................<not displayed>
GidPrefix:.......................0xfe80000000000000
Lid:.............................0
SMLid:...........................0
CapMask:.........................0xa651e848
				IsTrapSupported
				IsAutomaticMigrationSupported
				IsSLMappingSupported
DiagCode:........................0x0000
MkeyLeasePeriod:.................0
LocalPort:.......................1
LinkWidthEnabled:................1X or 4X
LinkWidthSupported:..............1X or 4X
LinkWidthActive:.................4X
LinkSpeedSupported:..............2.5 Gbps or 5.0 Gbps or 10.0 Gbps
LinkState:.......................Down
PhysLinkState:...................Polling
LinkDownDefState:................Polling
`

// ibexit's line (stdout) when nothing answers at hop 1.
const iberrorOutput = "smpquery: iberror: failed: operation nodeinfo: node info query failed\n"

func TestParseNodeInfo(t *testing.T) {
	t.Parallel()
	replace := func(old, new string) string { return strings.Replace(switchNodeInfo, old, new, 1) }
	for _, tc := range []struct {
		name string
		out  string
		want ibneighbor.NodeInfo
		err  string // "" for none
	}{
		{name: "a switch", out: switchNodeInfo, want: ibneighbor.NodeInfo{NodeType: "Switch", NumPorts: 41, GUID: 0x0002c9030000abcd, LocalPort: 17}},
		{name: "a back-to-back host", out: caNodeInfo, want: ibneighbor.NodeInfo{NodeType: "Channel Adapter", NumPorts: 1, GUID: 0xb83fd20300a1b2c4, LocalPort: 1}},
		{name: "without the header", out: strings.SplitN(switchNodeInfo, "\n", 2)[1], want: ibneighbor.NodeInfo{NodeType: "Switch", NumPorts: 41, GUID: 0x0002c9030000abcd, LocalPort: 17}},
		{name: "a node type libibmad does not know", out: replace("Switch", "?(7)?"), want: ibneighbor.NodeInfo{NodeType: "?(7)?", NumPorts: 41, GUID: 0x0002c9030000abcd, LocalPort: 17}},
		{name: "a router", out: replace("Switch", "Router"), want: ibneighbor.NodeInfo{NodeType: "Router", NumPorts: 41, GUID: 0x0002c9030000abcd, LocalPort: 17}},

		{name: "empty", out: "", err: "no NodeType field"},
		{name: "garbage", out: "hello world\n", err: "line 1 is not a field"},
		{name: "binary", out: "\x00\xff\xfe:\x01", err: "line 1 is not a field"},
		{name: "the iberror line", out: iberrorOutput, err: `smpquery said "failed: operation nodeinfo: node info query failed"`},
		{name: "cut after NodeType", out: switchNodeInfo[:strings.Index(switchNodeInfo, "NumPorts")], err: "no Guid field"},
		{name: "cut inside the GUID", out: switchNodeInfo[:strings.Index(switchNodeInfo, "abcd\nPortGuid")], err: `Guid "0x0002c9030000" is not`},
		{name: "cut inside the dots", out: switchNodeInfo[:strings.Index(switchNodeInfo, "LocalPort")+14], err: "is not a field"},
		{name: "no LocalPort", out: replace("LocalPort:.......................17\n", ""), err: "no LocalPort field"},
		{name: "Guid twice", out: switchNodeInfo + "Guid:............................0x0002c9030000ffff\n", err: "field Guid twice"},
		{name: "the dump twice", out: switchNodeInfo + switchNodeInfo, err: "twice"},
		{name: "a GUID of 17 digits", out: replace("Guid:............................0x0002c9030000abcd", "Guid:............................0x10002c9030000abcd"), err: "not 0x and 16 hex digits"},
		{name: "a GUID of 1000 digits", out: replace("Guid:............................0x0002c9030000abcd", "Guid:............................0x"+strings.Repeat("f", 1000)), err: "not 0x and 16 hex digits"},
		{name: "a GUID that is not hex", out: replace("Guid:............................0x0002c9030000abcd", "Guid:............................0x0002c9030000abcz"), err: "not a GUID"},
		{name: "a zero GUID", out: replace("Guid:............................0x0002c9030000abcd", "Guid:............................0x0000000000000000"), err: "not a GUID"},
		{name: "LocalPort 300", out: replace("LocalPort:.......................17", "LocalPort:.......................300"), err: "not a port number"},
		{name: "LocalPort of 30 digits", out: replace("LocalPort:.......................17", "LocalPort:......................."+strings.Repeat("9", 30)), err: "not a port number"},
		{name: "LocalPort 0", out: replace("LocalPort:.......................17", "LocalPort:.......................0"), err: "not a port number"},
		{name: "LocalPort 255", out: replace("LocalPort:.......................17", "LocalPort:.......................255"), err: "not a port number"},
		{name: "LocalPort negative", out: replace("LocalPort:.......................17", "LocalPort:.......................-1"), err: "not a port number"},
		{name: "LocalPort above NumPorts", out: replace("NumPorts:........................41", "NumPorts:........................8"), err: "LocalPort 17 above NumPorts 8"},
		{name: "an unknown node type", out: replace("Switch", "Toaster"), err: `NodeType "Toaster"`},
		{name: "one dot too few", out: replace("Guid:............................0x", "Guid:...........................0x"), err: "is not a field"},
		{name: "one dot too many", out: replace("Guid:............................0x", "Guid:.............................0x"), err: "is not a field"},
		{name: "a name too long", out: strings.Repeat("N", 40) + ":0x1\n", err: "is not a field"},
		{name: "over 64 KiB", out: switchNodeInfo + "# " + strings.Repeat("x", 64<<10) + "\n", err: "over 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ibneighbor.ParseNodeInfo([]byte(tc.out))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseNodeInfo = %+v, %v; want an error with %q", got, err, tc.err)
				}
				if !strings.HasPrefix(err.Error(), "smpquery said") && !errors.Is(err, ibneighbor.ErrBadOutput) {
					t.Errorf("error %v does not wrap ErrBadOutput", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseNodeInfo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNodeDesc(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out, want string
		err             string
	}{
		{name: "a managed switch", out: switchNodeDesc, want: "MF0;leaf-r3-su1:MQM8700/U1"},
		{name: "a host", out: hostNodeDesc, want: "gpu-node-8 mlx5_0"},
		{name: "an unnamed switch", out: defaultNodeDesc, want: "Quantum Mellanox Technologies"},
		{name: "empty", out: "Node Description:................................\n", want: ""},
		{name: "31 bytes: one dot", out: "Node Description:.0123456789abcdef0123456789abcde\n", want: "0123456789abcdef0123456789abcde"},
		{name: "32 bytes: one dot", out: "Node Description:." + strings.Repeat("x", 32) + "\n", want: strings.Repeat("x", 32)},
		{name: "64 bytes", out: "Node Description:." + strings.Repeat("y", 64) + "\n", want: strings.Repeat("y", 64)},
		{name: "a name map's long name, bounded", out: "Node Description:." + strings.Repeat("z", 1000) + "\n", want: strings.Repeat("z", 255)},
		{name: "trailing spaces (non-printable bytes made spaces)", out: "Node Description:" + strings.Repeat(".", 24) + "leaf-7  \n", want: "leaf-7"},
		{name: "without a newline", out: strings.TrimSuffix(switchNodeDesc, "\n"), want: "MF0;leaf-r3-su1:MQM8700/U1"},
		{name: "a control byte escaped", out: "Node Description:" + strings.Repeat(".", 29) + "a\x1bb\n", want: `a\x1bb`},

		{name: "nothing", out: "", err: "no node description"},
		{name: "garbage", out: "Node info\n", err: "not a node description"},
		{name: "the iberror line", out: "smpquery: iberror: failed: operation nodedesc: node desc query failed\n", err: "smpquery said"},
		{name: "cut inside the dots", out: "Node Description:......", err: "cut short"},
		{name: "no dots", out: "Node Description:leaf-1\n", err: "cut short"},
		{name: "twice", out: switchNodeDesc + switchNodeDesc, err: "two node descriptions"},
		{name: "a second line", out: switchNodeDesc + "LocalPort:.......................17\n", err: "line 2 is not a node description"},
		{name: "over 64 KiB", out: "Node Description:." + strings.Repeat("x", 64<<10) + "\n", err: "over 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ibneighbor.ParseNodeDesc([]byte(tc.out))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseNodeDesc = %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ParseNodeDesc = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParsePortState(t *testing.T) {
	t.Parallel()
	got, err := ibneighbor.ParsePortState([]byte(downPortInfo))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ibneighbor.PortState{LinkState: "Down", PhysLinkState: "Polling"}, got); diff != "" {
		t.Errorf("ParsePortState (-want +got):\n%s", diff)
	}
	for _, bad := range []string{
		"",
		iberrorOutput,
		strings.Replace(downPortInfo, "PhysLinkState:...................Polling\n", "", 1),
		strings.Replace(downPortInfo, "Down", "Down and out", 1),
		downPortInfo + "LinkState:.......................Active\n",
	} {
		if ps, err := ibneighbor.ParsePortState([]byte(bad)); err == nil {
			t.Errorf("ParsePortState(%q) = %+v, want an error", bad, ps)
		}
	}
}

// The fake's writers, which the other tests use, write what the
// hand-written outputs above hold.
func TestFakeWritersMatchHandWrittenOutputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{ibneighbortest.NodeInfo(ibneighbortest.Node{Type: "Switch", GUID: 0x0002c9030000abcd, NumPorts: 41, LocalPort: 17}), switchNodeInfo},
		{ibneighbortest.NodeDesc("MF0;leaf-r3-su1:MQM8700/U1"), switchNodeDesc},
		{ibneighbortest.NodeDesc("gpu-node-8 mlx5_0"), hostNodeDesc},
		{ibneighbortest.PortInfo(1, "Down", "Polling"), downPortInfo},
	} {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("writer output (-want +got):\n%s", diff)
		}
	}
}

func TestFormatGUID(t *testing.T) {
	t.Parallel()
	for g, want := range map[uint64]string{0x0002c9030000abcd: "0x0002c9030000abcd", 1: "0x0000000000000001", ^uint64(0): "0xffffffffffffffff"} {
		if got := ibneighbor.FormatGUID(g); got != want {
			t.Errorf("FormatGUID(%#x) = %q, want %q", g, got, want)
		}
	}
}

// FuzzParse feeds any output to the three parsers: none panics, and what
// they accept holds their promises (a non-zero GUID, a local port within
// the node's ports, a bounded description that a nodedesc line writes
// back).
func FuzzParse(f *testing.F) {
	for _, s := range []string{switchNodeInfo, caNodeInfo, switchNodeDesc, hostNodeDesc, defaultNodeDesc, downPortInfo, iberrorOutput,
		"", "\n", "Guid:", "Node Description:", "Node Description:" + strings.Repeat(".", 32), switchNodeInfo + switchNodeInfo} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		if ni, err := ibneighbor.ParseNodeInfo(out); err == nil {
			if ni.GUID == 0 || ni.LocalPort < 1 || ni.LocalPort > ni.NumPorts || ni.NumPorts > 254 || ni.NodeType == "" {
				t.Errorf("ParseNodeInfo accepted %+v", ni)
			}
			back, err := ibneighbor.ParseNodeInfo([]byte(ibneighbortest.NodeInfo(ibneighbortest.Node{Type: ni.NodeType, GUID: ni.GUID, NumPorts: ni.NumPorts, LocalPort: ni.LocalPort})))
			if err != nil || back != ni {
				t.Errorf("NodeInfo %+v written and read back: %+v, %v", ni, back, err)
			}
		}
		if desc, err := ibneighbor.ParseNodeDesc(out); err == nil {
			if len(desc) > 255*4 || !utf8.ValidString(desc) {
				t.Errorf("ParseNodeDesc accepted %q", desc)
			}
			if !strings.HasPrefix(desc, ".") {
				if back, err := ibneighbor.ParseNodeDesc([]byte(ibneighbortest.NodeDesc(desc))); err != nil || back != desc {
					t.Errorf("NodeDesc %q written and read back: %q, %v", desc, back, err)
				}
			}
		}
		if ps, err := ibneighbor.ParsePortState(out); err == nil && (ps.LinkState == "" || ps.PhysLinkState == "") {
			t.Errorf("ParsePortState accepted %+v", ps)
		}
	})
}
