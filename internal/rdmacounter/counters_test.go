package rdmacounter

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/sysfs"
)

func TestTableIsConsistent(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`^[a-z][a-z0-9_]*[a-z0-9]$`)
	names, files := map[string]bool{}, map[string]bool{}
	for _, c := range Counters() {
		key := string(c.Dir) + "/" + c.File
		switch {
		case !name.MatchString(c.Name):
			t.Errorf("%s: name %q is not a metric name stem", key, c.Name)
		case names[c.Name]:
			t.Errorf("%s: name %q used twice", key, c.Name)
		case files[key]:
			t.Errorf("%s read twice", key)
		case c.Scale < 1:
			t.Errorf("%s: scale %d", key, c.Scale)
		case c.Width != 4 && c.Width != 8 && c.Width != 16 && c.Width != 32 && c.Width != 64:
			t.Errorf("%s: width %d", key, c.Width)
		case c.Help == "" || c.Unit == "" || c.Kind == "":
			t.Errorf("%s: help, unit or kind missing", key)
		case c.Unit == Bytes && c.Scale != 4:
			t.Errorf("%s: bytes from the PMA's word counters need scale 4, have %d", key, c.Scale)
		}
		names[c.Name], files[key] = true, true
	}
	if i := Index("port_transmit_bytes"); i < 0 || Counters()[i].File != "port_xmit_data" {
		t.Errorf("Index(port_transmit_bytes) = %d", i)
	}
	if Index("nope") != -1 {
		t.Error("Index of an unknown name is not -1")
	}
}

// Health judges error counters only, History only link faults, and every
// judged kind of the health check has a counter.
func TestHealthIsOnErrorCounters(t *testing.T) {
	t.Parallel()
	judged := map[Health]int{}
	for _, c := range Counters() {
		switch {
		case c.Health != NoHealth && c.Kind != Error:
			t.Errorf("%s: health %q on a %s counter", c.Name, c.Health, c.Kind)
		case c.Health == LinkFault && !c.Link:
			t.Errorf("%s: a link fault on a counter that is not the link's", c.Name)
		case c.History && c.Health != LinkFault:
			t.Errorf("%s: history on a counter that is no link fault", c.Name)
		case c.Flap && c.Health != LinkFault:
			t.Errorf("%s: a flap on a counter that is no link fault", c.Name)
		}
		judged[c.Health]++
	}
	for _, h := range []Health{LinkFault, TransportFailure, Retransmission} {
		if judged[h] == 0 {
			t.Errorf("no counter is %q", h)
		}
	}
}

// Every traffic counter has a direction and no other counter has one, and
// each of Summarize's four traffic rates has a counter in the PMA's
// counters (bytes and packets) and rxe's (packets).
func TestTrafficCountersHaveAWay(t *testing.T) {
	t.Parallel()
	type slot struct {
		dir  sysfs.CounterDir
		unit Unit
		way  Way
	}
	seen := map[slot]int{}
	for _, c := range Counters() {
		switch {
		case c.Kind == Traffic && c.Way != Transmit && c.Way != Receive:
			t.Errorf("%s: a traffic counter with way %q", c.Name, c.Way)
		case c.Kind != Traffic && c.Way != NoWay:
			t.Errorf("%s: way %q on a %s counter", c.Name, c.Way, c.Kind)
		case c.Kind == Traffic && c.Unit != Bytes && c.Unit != Packets:
			t.Errorf("%s: a traffic counter in %s: Summarize adds bytes and packets only", c.Name, c.Unit)
		}
		if c.Kind == Traffic {
			seen[slot{c.Dir, c.Unit, c.Way}]++
		}
	}
	for _, s := range []slot{
		{sysfs.PMACounters, Bytes, Transmit}, {sysfs.PMACounters, Bytes, Receive},
		{sysfs.PMACounters, Packets, Transmit}, {sysfs.PMACounters, Packets, Receive},
		{sysfs.HWCounters, Packets, Transmit}, {sysfs.HWCounters, Packets, Receive},
	} {
		if seen[s] != 1 {
			t.Errorf("%d traffic counters in %s of %s, %s; want 1", seen[s], s.dir, s.unit, s.way)
		}
	}
}

// tree generates the small node and gives its three RDMA devices the
// counters of mlx5 (mlx5_0, InfiniBand), a legacy PMA (mlx5_1) and rxe
// (mlx5_2).
func tree(t *testing.T) string {
	t.Helper()
	d, err := fakesysfs.SmallNode()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := fakesysfs.Generate(root, d, fakesysfs.Options{}); err != nil {
		t.Fatal(err)
	}
	for rdma, drv := range map[string]fakesysfs.CounterDriver{"mlx5_0": fakesysfs.MLX5, "mlx5_1": fakesysfs.PMALegacy, "mlx5_2": fakesysfs.RXE} {
		if err := fakesysfs.WriteCounters(root, rdma, drv); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Every file of the table is one a driver really has: read from trees
// that the fake writes with the kernel's file names, each row is found on
// some device (a typo in the table would never be read).
func TestEveryCounterIsAKernelFile(t *testing.T) {
	t.Parallel()
	root := tree(t)
	found := make([]bool, numCounters)
	for _, rdma := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		s, err := Read(sysfs.New(root), rdma, 1, true, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for i := range numCounters {
			_, ok := s.Raw(i)
			found[i] = found[i] || ok
		}
	}
	for i, c := range Counters() {
		if !found[i] {
			t.Errorf("%s/%s is in the table but no driver's port has it", c.Dir, c.File)
		}
	}
}

func TestRawDelta(t *testing.T) {
	t.Parallel()
	w := func(width uint) Counter { return Counter{Width: width, Scale: 1} }
	for _, c := range []struct {
		name      string
		c         Counter
		prev, cur uint64
		want      uint64
		ev        Event
	}{
		{"up", w(64), 10, 25, 15, Counted},
		{"still", w(16), 7, 7, 0, Counted},
		{"16-bit symbol_error wraps", w(16), 65530, 4, 10, Wrapped},
		{"8-bit link_downed wraps", w(8), 250, 3, 9, Wrapped},
		{"4-bit wraps", w(4), 14, 1, 3, Wrapped},
		{"32-bit legacy data wraps", w(32), math.MaxUint32 - 99, 100, 200, Wrapped},
		{"64-bit wraps", w(64), math.MaxUint64 - 9, 5, 15, Wrapped},
		{"reset from the lower half", w(16), 1000, 3, 3, Reset},
		{"reset to zero", w(32), 5, 0, 0, Reset},
		{"64-bit counter goes down: reset", w(64), 1 << 40, 100, 100, Reset},
		{"a 32-bit counter above 2^32 is no 32-bit value: reset", w(32), 1 << 33, 7, 7, Reset},
		{"wrap needs the new value in the lower half", w(16), 65000, 40000, 40000, Reset},
	} {
		got, ev := c.c.RawDelta(c.prev, c.cur)
		if got != c.want || ev != c.ev {
			t.Errorf("%s: RawDelta(%d, %d) = %d, %v; want %d, %v", c.name, c.prev, c.cur, got, ev, c.want, c.ev)
		}
	}
}

func TestScaledSaturates(t *testing.T) {
	t.Parallel()
	c := Counter{Scale: 4}
	if got := c.Scaled(1000); got != 4000 {
		t.Errorf("1000 words = %d bytes, want 4000", got)
	}
	if got := c.Scaled(math.MaxUint64 / 2); got != math.MaxUint64 {
		t.Errorf("overflowing scale = %d, want saturation", got)
	}
}

func advance(t *testing.T, root, rdma string, drv fakesysfs.CounterDriver, by map[string]uint64) {
	t.Helper()
	if err := fakesysfs.AdvanceCounters(root, rdma, 1, drv, by); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, rdma string, link bool, at time.Time) Sample {
	t.Helper()
	s, err := Read(sysfs.New(root), rdma, 1, link, at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// totals returns the named counters' totals.
func totals(t *testing.T, tot *Totals, names ...string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, n := range names {
		v, ok := tot.Total(Index(n))
		if !ok {
			t.Fatalf("%s never sampled", n)
		}
		out[n] = v
	}
	return out
}

// A port whose counters move, wrap at their kernel width and are reset by
// a device reset: the totals are exactly what was counted, in bytes for
// the data counters, and never go down; the rates between two samples
// are per second in the same units.
func TestTotalsFollowMovingCountersThroughWrapsAndResets(t *testing.T) {
	t.Parallel()
	root := tree(t)
	t0 := time.Unix(1_700_000_000, 0)
	var tot Totals
	s0 := read(t, root, "mlx5_0", true, t0)
	tot.Add(&s0)

	// Traffic: 1,000,000 words each way, 2,000 packets; 65,530 symbol
	// errors (almost a wrap of the 16-bit counter) and 5,000 out_of_buffer.
	advance(t, root, "mlx5_0", fakesysfs.MLX5, map[string]uint64{
		"counters/port_xmit_data": 1_000_000, "counters/port_rcv_data": 1_000_000,
		"counters/port_xmit_packets": 2000, "counters/symbol_error": 65530,
		"hw_counters/out_of_buffer": 5000, "hw_counters/np_cnp_sent": 12,
	})
	s1 := read(t, root, "mlx5_0", true, t0.Add(10*time.Second))
	tot.Add(&s1)
	rates := map[string]float64{}
	for _, r := range Rates(&s0, &s1) {
		rates[Counters()[r.Index].Name] = r.PerSecond
	}
	for name, want := range map[string]float64{"port_transmit_bytes": 400_000, "port_transmit_packets": 200, "cnp_sent": 1.2, "out_of_buffer": 500} {
		if rates[name] != want {
			t.Errorf("rate of %s = %v/s, want %v", name, rates[name], want)
		}
	}

	// symbol_error wraps (65530 + 10 = 4 mod 65536); then the device is
	// reset and counts again from zero.
	advance(t, root, "mlx5_0", fakesysfs.MLX5, map[string]uint64{"counters/symbol_error": 10, "counters/port_xmit_data": 500})
	s2 := read(t, root, "mlx5_0", true, t0.Add(20*time.Second))
	tot.Add(&s2)
	if ev := tot.LastEvent(Index("port_symbol_errors")); ev != Wrapped {
		t.Errorf("symbol_error's last move: %v, want wrapped", ev)
	}
	if err := fakesysfs.ResetCounters(root, "mlx5_0", 1); err != nil {
		t.Fatal(err)
	}
	advance(t, root, "mlx5_0", fakesysfs.MLX5, map[string]uint64{"counters/port_xmit_data": 250, "counters/symbol_error": 1, "hw_counters/np_cnp_sent": 3})
	s3 := read(t, root, "mlx5_0", true, t0.Add(30*time.Second))
	tot.Add(&s3)
	if ev := tot.LastEvent(Index("port_transmit_bytes")); ev != Reset {
		t.Errorf("port_xmit_data's last move: %v, want reset", ev)
	}
	for _, r := range Rates(&s2, &s3) {
		if r.PerSecond < 0 {
			t.Errorf("%s: negative rate %v across a reset", Counters()[r.Index].Name, r.PerSecond)
		}
	}

	want := map[string]uint64{
		"port_transmit_bytes":   4 * (1_000_000 + 500 + 250),
		"port_receive_bytes":    4 * 1_000_000,
		"port_transmit_packets": 2000,
		"port_symbol_errors":    65530 + 10 + 1,
		"out_of_buffer":         5000,
		"cnp_sent":              12 + 3,
	}
	if diff := cmp.Diff(want, totals(t, &tot, "port_transmit_bytes", "port_receive_bytes", "port_transmit_packets", "port_symbol_errors", "out_of_buffer", "cnp_sent")); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
}

// A legacy PMA's 32-bit data counter wraps between two samples: the total
// keeps counting (in bytes) instead of reading as a reset.
func TestLegacy32BitDataCounterWraps(t *testing.T) {
	t.Parallel()
	root := tree(t)
	if err := fakesysfs.SetCounter(root, "mlx5_1", 1, "counters/port_xmit_data", math.MaxUint32-1000); err != nil {
		t.Fatal(err)
	}
	var tot Totals
	s0 := read(t, root, "mlx5_1", true, time.Unix(0, 0))
	tot.Add(&s0)
	advance(t, root, "mlx5_1", fakesysfs.PMALegacy, map[string]uint64{"counters/port_xmit_data": 3000})
	s1 := read(t, root, "mlx5_1", true, time.Unix(1, 0))
	tot.Add(&s1)
	raw, _ := s1.Raw(Index("port_transmit_bytes"))
	if raw != 1999 {
		t.Fatalf("the fake did not wrap: raw %d, want 1999", raw)
	}
	got, _ := tot.Total(Index("port_transmit_bytes"))
	if want := uint64(4 * (math.MaxUint32 - 1000 + 3000)); got != want {
		t.Errorf("total after a 32-bit wrap = %d bytes, want %d", got, want)
	}
	r := Rates(&s0, &s1)
	for _, x := range r {
		if x.Index == Index("port_transmit_bytes") && (x.PerSecond != 12000 || x.Event != Wrapped) {
			t.Errorf("rate across the wrap = %v/s (%v), want 12000/s wrapped", x.PerSecond, x.Event)
		}
	}
}

// A VF shares its PF's link: its link counters are not read.
func TestReadLeavesLinkCountersToThePF(t *testing.T) {
	t.Parallel()
	root := tree(t)
	pf := read(t, root, "mlx5_0", true, time.Now())
	vf := read(t, root, "mlx5_0", false, time.Now())
	for i, c := range Counters() {
		_, inPF := pf.Raw(i)
		_, inVF := vf.Raw(i)
		if c.Link && inVF {
			t.Errorf("link counter %s read without link", c.Name)
		}
		if !c.Link && inPF != inVF {
			t.Errorf("%s: PF read %v, VF read %v", c.Name, inPF, inVF)
		}
	}
}

// A counter file that does not parse is left out and reported; the rest
// of the port is read.
func TestReadKeepsWhatItCanRead(t *testing.T) {
	t.Parallel()
	root := tree(t)
	p := filepath.Join(root, "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data")
	if err := os.WriteFile(p, []byte("N/A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Read(sysfs.New(root), "mlx5_0", 1, true, time.Now())
	if !errors.Is(err, sysfs.ErrBadCounter) {
		t.Errorf("error %v, want ErrBadCounter", err)
	}
	var ce *CounterError
	if !errors.As(err, &ce) || ce.Index != Index("port_receive_bytes") {
		t.Errorf("error %v does not say which counter (CounterError %+v)", err, ce)
	}
	if _, ok := s.Raw(Index("port_receive_bytes")); ok {
		t.Error("the bad counter is in the sample")
	}
	if _, ok := s.Raw(Index("port_transmit_bytes")); !ok {
		t.Error("the good counters are not in the sample")
	}
	if _, err := Read(sysfs.New(root), "../mlx5_0", 1, true, time.Now()); err == nil {
		t.Error("a device name with a separator was read")
	}
}

// Whatever two readings are, a delta is never more than one wrap, a
// counted or wrapped delta lands exactly on the new value modulo the
// width, and a reset counts the new value.
func FuzzRawDelta(f *testing.F) {
	for _, s := range []struct {
		width     uint8
		prev, cur uint64
	}{{16, 65530, 4}, {8, 250, 3}, {32, 5, 0}, {64, math.MaxUint64, 0}, {4, 14, 1}, {32, 1 << 33, 7}, {64, 10, 25}} {
		f.Add(s.width, s.prev, s.cur)
	}
	widths := []uint{4, 8, 16, 32, 64}
	f.Fuzz(func(t *testing.T, w uint8, prev, cur uint64) {
		c := Counter{Width: widths[int(w)%len(widths)], Scale: 1}
		d, ev := c.RawDelta(prev, cur)
		switch ev {
		case Counted:
			if cur < prev || d != cur-prev {
				t.Fatalf("width %d: %d -> %d counted %d", c.Width, prev, cur, d)
			}
		case Wrapped:
			mask := uint64(math.MaxUint64)
			if c.Width < 64 {
				mask = 1<<c.Width - 1
			}
			if cur >= prev || d == 0 || (prev+d)&mask != cur { // prev+d wraps at 2^64 for width 64
				t.Fatalf("width %d: %d -> %d wrapped by %d", c.Width, prev, cur, d)
			}
			if c.Width < 64 && d > 1<<c.Width {
				t.Fatalf("width %d: %d -> %d wrapped by %d, more than one wrap", c.Width, prev, cur, d)
			}
		case Reset:
			if cur >= prev || d != cur {
				t.Fatalf("width %d: %d -> %d reset counting %d", c.Width, prev, cur, d)
			}
		default:
			t.Fatalf("event %v", ev)
		}
	})
}
