package binding

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReaperReleasesAfterTheGrace walks the policy over successive lists:
// a token held by its own pod stays; one another pod holds goes at once;
// one held by no pod goes only once it stayed unheld for Grace
// (AnonymousGrace for a binding of no known pod); a binding the list does
// not postdate is left alone; a kubelet restart starts every grace again;
// the same token bound to another pod starts its own.
func TestReaperReleasesAfterTheGrace(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	a := PodRef{Namespace: "ml", Name: "a", UID: "ua"}
	b := PodRef{Namespace: "ml", Name: "b", UID: "ub"}
	c := PodRef{Namespace: "ml", Name: "c", UID: "uc"}
	bs := []Binding{
		{Token: "t-own", Pod: a, At: t0},
		{Token: "t-taken", Pod: a, At: t0},
		{Token: "t-unheld", Pod: b, At: t0},
		{Token: "t-anon", At: t0},
		{Token: "t-new", Pod: a, At: t0.Add(time.Hour)}, // made after every list below
	}
	r := &Reaper{Grace: 10 * time.Second}
	list := func(at time.Duration) Holders {
		return Holders{At: t0.Add(at), Pods: map[string]PodRef{"t-own": a, "t-taken": c}}
	}
	step := func(name string, at time.Duration, want map[string]PodRef) {
		t.Helper()
		if diff := cmp.Diff(want, r.Due(bs, list(at))); diff != "" {
			t.Errorf("%s: due (-want +got):\n%s", name, diff)
		}
	}
	step("first list", time.Second, map[string]PodRef{"t-taken": a})
	step("within the grace", 5*time.Second, map[string]PodRef{"t-taken": a})
	step("grace over", 11*time.Second, map[string]PodRef{"t-taken": a, "t-unheld": b})

	r.KubeletRestarted()
	step("first list after a kubelet restart", 30*time.Second, map[string]PodRef{"t-taken": a})
	step("grace over again", 41*time.Second, map[string]PodRef{"t-taken": a, "t-unheld": b})

	// The token goes to pod c: its unheld time is its own.
	bs[2].Pod = c
	step("same token, another pod", 42*time.Second, map[string]PodRef{"t-taken": a})
	step("its grace over", 53*time.Second, map[string]PodRef{"t-taken": a, "t-unheld": c})

	step("anonymous binding's grace over", 31*time.Second+AnonymousGrace, map[string]PodRef{"t-taken": a, "t-unheld": c, "t-anon": {}})
}
