package binding

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReleaseOrdersByTheBootClockNotTheWallClock binds a pod's token, then
// the wall clock is stepped back an hour and the pod ends: a list taken
// after that must release the binding (it was kept for the hour: its wall
// time looked newer than the list's). A list of the binding's boot taken
// before it must not, whatever the wall clock says, and a list of a later
// boot releases a binding of an earlier one.
func TestReleaseOrdersByTheBootClockNotTheWallClock(t *testing.T) {
	t.Parallel()
	wall := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	boot := BootTime{ID: "boot-a", NS: int64(100 * time.Second)}
	v, tp := testView(t, "dgx-h100", 1)
	s := newTestStore(t, v, Options{Now: func() time.Time { return wall }, Boot: func() BootTime { return boot }})
	ctx := context.Background()
	g := gpusOf(tp)[0]
	bind := func(name string) string {
		t.Helper()
		tok := freeTokens(t, s, v, g.NUMA, 1, map[string]bool{})
		if _, err := s.Bind(ctx, Request{Pod: PodRef{Namespace: "ns", Name: name}, By: ByAgent,
			Containers: []ContainerTokens{{Name: "main", Tokens: tok, GPUs: []string{g.PCI}}}}); err != nil {
			t.Fatal(err)
		}
		return tok[0]
	}
	released := func(h Holders) []string {
		t.Helper()
		gone, err := s.ReleaseGone(ctx, h, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range gone {
			out = append(out, b.Pod.Name)
		}
		return out
	}
	noPods := map[string]PodRef{}

	earlier := Holders{At: wall.Add(time.Hour), Boot: BootTime{ID: "boot-a", NS: boot.NS - 1}, Pods: noPods}
	bind("stepped")
	if diff := cmp.Diff([]string(nil), released(earlier)); diff != "" {
		t.Errorf("a list taken before the bind (wall clock ahead) released (-want +got):\n%s", diff)
	}
	wall, boot.NS = wall.Add(-time.Hour), boot.NS+int64(10*time.Second) // clock stepped back; 10 s pass
	if diff := cmp.Diff([]string{"stepped"}, released(Holders{At: wall, Boot: boot, Pods: noPods})); diff != "" {
		t.Errorf("after the wall clock stepped back (-want +got):\n%s", diff)
	}

	bind("old-boot")
	next := Holders{At: wall.Add(-24 * time.Hour), Boot: BootTime{ID: "boot-b", NS: 1}, Pods: noPods}
	if diff := cmp.Diff([]string{"old-boot"}, released(next)); diff != "" {
		t.Errorf("a list of a later boot (-want +got):\n%s", diff)
	}
}

// TestSystemBootTimeAdvances reads the real boot clock twice.
func TestSystemBootTimeAdvances(t *testing.T) {
	t.Parallel()
	a := SystemBootTime()
	b := SystemBootTime()
	if a.ID == "" || a.ID != b.ID || b.NS < a.NS || a.NS <= 0 {
		t.Errorf("boot times %+v then %+v: want one boot ID and a clock that does not go back", a, b)
	}
}
