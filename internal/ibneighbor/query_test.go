package ibneighbor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/ibneighbor"
	"github.com/railyard-io/railyard/internal/ibneighbor/ibneighbortest"
	"github.com/railyard-io/railyard/internal/lldp"
)

// The smpquery runs below are ibneighbortest.Fake's canned outputs (this
// host has no InfiniBand port, subnet or infiniband-diags): the
// hand-written outputs of parse_test.go, per (CA, port, operation).

func key(op string) ibneighbortest.Key { return ibneighbortest.Key{CA: "mlx5_0", Port: 1, Op: op} }

var leafR3 = lldp.Neighbor{
	ChassisID: "0x0002c9030000abcd", ChassisIDType: "InfiniBand node GUID",
	PortID: "17", PortIDType: "InfiniBand port number",
	SystemName: "MF0;leaf-r3-su1:MQM8700/U1", SystemDescription: "InfiniBand Switch",
}

func TestQueryFakeSmpquery(t *testing.T) {
	t.Parallel()
	openFailed := ibneighbortest.Answer{
		Out: "smpquery: iberror: failed: Failed to open 'mlx5_0' port '1'\n",
		Err: errors.New("smpquery -C mlx5_0 -P 1 -D nodeinfo 0,1: exit status 255: ibwarn: [311] mad_rpc_open_port2: can't open UMAD port (mlx5_0:1)"),
	}
	for _, tc := range []struct {
		name    string
		fake    *ibneighbortest.Fake
		want    lldp.Neighbor
		errIs   error    // nil: no error
		errHas  []string // in the error
		noCalls bool
	}{
		{
			name: "a leaf switch",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): {Out: switchNodeInfo}, key("nodedesc"): {Out: switchNodeDesc}}},
			want: leafR3,
		},
		{
			name: "an unnamed switch: its vendor's default description",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): {Out: switchNodeInfo}, key("nodedesc"): {Out: defaultNodeDesc}}},
			want: lldp.Neighbor{ChassisID: "0x0002c9030000abcd", ChassisIDType: "InfiniBand node GUID", PortID: "17", PortIDType: "InfiniBand port number",
				SystemName: "Quantum Mellanox Technologies", SystemDescription: "InfiniBand Switch"},
		},
		{
			name: "a back-to-back cable: still a neighbor, and not a switch",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): {Out: caNodeInfo}, key("nodedesc"): {Out: hostNodeDesc}}},
			want: lldp.Neighbor{ChassisID: "0xb83fd20300a1b2c4", ChassisIDType: "InfiniBand node GUID", PortID: "1", PortIDType: "InfiniBand port number",
				SystemName: "gpu-node-8 mlx5_0", SystemDescription: "InfiniBand Channel Adapter"},
			errIs:  ibneighbor.ErrNotSwitch,
			errHas: []string{"mlx5_0 port 1: ", "Channel Adapter 0xb83fd20300a1b2c4 port 1", "gpu-node-8 mlx5_0", "back-to-back"},
		},
		{
			name:   "smpquery not installed",
			fake:   &ibneighbortest.Fake{NotInstalled: true},
			errIs:  ibneighbor.ErrNotInstalled,
			errHas: []string{"mlx5_0 port 1: ", "install infiniband-diags"},
		},
		{
			name: "the port is down",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("portinfo"): {Out: ibneighbortest.PortInfo(1, "Down", "Polling")}}},
			errIs:  ibneighbor.ErrPortDown,
			errHas: []string{"mlx5_0 port 1: the port is down", "PhysLinkState Polling"},
		},
		{
			name: "the port is up and hop 1 does not answer: smpquery's words",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("portinfo"): {Out: ibneighbortest.PortInfo(1, "Active", "LinkUp")}}},
			errIs:  ibneighbor.ErrQuery,
			errHas: []string{"failed: operation nodeinfo: node info query failed", "ibwarn: [4242] mad_rpc: _do_madrpc failed"},
		},
		{
			name: "no access to the umad device",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): openFailed, key("portinfo"): openFailed}},
			errIs:  ibneighbor.ErrQuery,
			errHas: []string{"Failed to open 'mlx5_0' port '1'", "can't open UMAD port", "read-write access to the port's umad device"},
		},
		{
			name: "nodedesc fails after nodeinfo",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): {Out: switchNodeInfo}}},
			errIs:  ibneighbor.ErrQuery,
			errHas: []string{"smpquery -D nodedesc 0,1"},
		},
		{
			name: "garbage from nodeinfo",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): {Out: "Segmentation fault\n"}, key("nodedesc"): {Out: switchNodeDesc}}},
			errIs:  ibneighbor.ErrBadOutput,
			errHas: []string{"smpquery -D nodeinfo 0,1: not smpquery's output"},
		},
		{
			name: "a truncated nodedesc",
			fake: &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
				key("nodeinfo"): {Out: switchNodeInfo}, key("nodedesc"): {Out: "Node Description:...."}}},
			errIs: ibneighbor.ErrBadOutput,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ibneighbor.Query(context.Background(), tc.fake, "mlx5_0", 1)
			if tc.errIs == nil && err != nil {
				t.Fatal(err)
			}
			if tc.errIs != nil && !errors.Is(err, tc.errIs) {
				t.Fatalf("Query error %v, want one wrapping %v", err, tc.errIs)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Query (-want +got):\n%s", diff)
			}
		})
	}
}

// A neighbor is two runs, each naming the CA, the port and hop 1 of the
// directed route; portinfo only runs to explain a failed nodeinfo.
func TestQueryRunsNodeinfoAndNodedescFakeSmpquery(t *testing.T) {
	t.Parallel()
	fake := &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
		{CA: "mlx5_3", Port: 2, Op: "nodeinfo"}: {Out: switchNodeInfo}, {CA: "mlx5_3", Port: 2, Op: "nodedesc"}: {Out: switchNodeDesc}}}
	if _, err := ibneighbor.Query(context.Background(), fake, "mlx5_3", 2); err != nil {
		t.Fatal(err)
	}
	want := []string{"smpquery -C mlx5_3 -P 2 -D nodeinfo 0,1", "smpquery -C mlx5_3 -P 2 -D nodedesc 0,1"}
	if diff := cmp.Diff(want, fake.Calls()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}

	down := &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
		{CA: "mlx5_3", Port: 2, Op: "portinfo"}: {Out: ibneighbortest.PortInfo(2, "Down", "Disabled")}}}
	_, err := ibneighbor.Query(context.Background(), down, "mlx5_3", 2)
	if !errors.Is(err, ibneighbor.ErrPortDown) {
		t.Fatalf("Query = %v, want the port down", err)
	}
	want = []string{"smpquery -C mlx5_3 -P 2 -D nodeinfo 0,1", "smpquery -C mlx5_3 -P 2 -D portinfo 0 2"}
	if diff := cmp.Diff(want, down.Calls()); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// A NIC without an RDMA device name (fabric.Port names it by its PCI
// address then), a name that would read as an option and a port out of
// range run nothing.
func TestQueryRefusesWhatIsNoPortFakeSmpquery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ca   string
		port int
	}{
		{"0000:05:00.0", 1}, {"-h", 1}, {"", 1}, {"mlx5 0", 1}, {strings.Repeat("m", 64), 1}, {"mlx5_0", 0}, {"mlx5_0", 255},
	} {
		fake := &ibneighbortest.Fake{}
		if nb, err := ibneighbor.Query(context.Background(), fake, tc.ca, tc.port); err == nil {
			t.Errorf("Query(%q, %d) = %+v, want an error", tc.ca, tc.port, nb)
		}
		if calls := fake.Calls(); len(calls) != 0 {
			t.Errorf("Query(%q, %d) ran %q", tc.ca, tc.port, calls)
		}
	}
}

func TestQueryStopsWithItsContextFakeSmpquery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ibneighbor.Query(ctx, &ibneighbortest.Fake{}, "mlx5_0", 1)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Query after cancel = %v, want context.Canceled", err)
	}
}

// smpquery's iberror text and its standard error end up in messages a
// terminal shows: escapes that would retitle the window (OSC, BEL),
// recolour it (CSI, also as C1), or reverse the text come out as visible
// escapes.
func TestQueryEscapesWhatSmpquerySaid(t *testing.T) {
	t.Parallel()
	hostile := ibneighbortest.Answer{
		Out: "smpquery: iberror: failed: \x1b]0;pwned\x07 \u009b31mred \u202eevil\n",
		Err: errors.New("smpquery -C mlx5_0 -P 1 -D nodeinfo 0,1: exit status 255"),
	}
	fake := &ibneighbortest.Fake{Answers: map[ibneighbortest.Key]ibneighbortest.Answer{
		key("nodeinfo"): hostile, key("portinfo"): {Out: ibneighbortest.PortInfo(1, "Active", "LinkUp")}}}
	_, err := ibneighbor.Query(context.Background(), fake, "mlx5_0", 1)
	if !errors.Is(err, ibneighbor.ErrQuery) {
		t.Fatalf("Query error %v, want ErrQuery", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, `failed: \x1b]0;pwned\x07 \x9b31mred \u202eevil`) {
		t.Errorf("error %q does not show smpquery's words escaped", msg)
	}
	if strings.ContainsAny(msg, "\x1b\x07\u009b\u202e") {
		t.Errorf("error %q holds terminal escapes", msg)
	}
}
