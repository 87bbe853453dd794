package rdmacounter

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// An mlx5 port's traffic (in bytes: words x 4), errors and congestion
// over 2 s, and an rxe port's packets without bytes or congestion (not
// known, rather than 0).
func TestSummarize(t *testing.T) {
	t.Parallel()
	root := tree(t)
	t0 := time.Unix(100, 0)
	s0 := read(t, root, "mlx5_0", true, t0)
	r0 := read(t, root, "mlx5_2", true, t0)
	advance(t, root, "mlx5_0", fakesysfs.MLX5, map[string]uint64{
		"counters/port_xmit_data": 500, "counters/port_rcv_data": 250,
		"counters/port_xmit_packets": 10, "counters/port_rcv_packets": 6,
		"counters/symbol_error": 2, "hw_counters/out_of_buffer": 4,
		"hw_counters/np_cnp_sent": 8, "hw_counters/rp_cnp_handled": 2, "counters/port_xmit_wait": 1000,
	})
	advance(t, root, "mlx5_2", fakesysfs.RXE, map[string]uint64{"hw_counters/sent_pkts": 40, "hw_counters/rcvd_pkts": 20, "hw_counters/send_err": 2})
	s1 := read(t, root, "mlx5_0", true, t0.Add(2*time.Second))
	r1 := read(t, root, "mlx5_2", true, t0.Add(2*time.Second))

	mlx := Summarize(Rates(&s0, &s1))
	all := Known{TxBytes: true, RxBytes: true, TxPackets: true, RxPackets: true, Errors: true, Congestion: true}
	want := Summary{TxBytes: 1000, RxBytes: 500, TxPackets: 5, RxPackets: 3, Errors: 3, Congestion: 5, Has: all}
	if diff := cmp.Diff(want, mlx); diff != "" {
		t.Errorf("mlx5 port (-want +got):\n%s", diff)
	}
	rxe := Summarize(Rates(&r0, &r1))
	// rxe: packets and errors, no bytes and no congestion counter: not
	// known, rather than 0.
	rxeHas := Known{TxPackets: true, RxPackets: true, Errors: true}
	if diff := cmp.Diff(Summary{TxPackets: 20, RxPackets: 10, Errors: 1, Has: rxeHas}, rxe); diff != "" {
		t.Errorf("rxe port (-want +got):\n%s", diff)
	}
	both := mlx.Add(rxe)
	if both.TxPackets != 25 || both.Errors != 4 || both.Has != all || both.TxBytes != 1000 {
		t.Errorf("sum %+v", both)
	}

	if err := fakesysfs.ResetCounters(root, "mlx5_0", 1); err != nil {
		t.Fatal(err)
	}
	s2, err := Read(sysfs.New(root), "mlx5_0", 1, true, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := Summarize(Rates(&s1, &s2)); !got.Reset || got.TxBytes != 0 {
		t.Errorf("after a device reset: %+v, want Reset and no traffic", got)
	}
}
