package sim

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMixJobShapes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]MixEntry{
		"2x4:1":             {{Pods: 2, GPUs: 4, Weight: 1}},
		"1:4, 2x4:1,8x8:.5": {{GPUs: 1, Weight: 4}, {Pods: 2, GPUs: 4, Weight: 1}, {Pods: 8, GPUs: 8, Weight: 0.5}},
		"1x4:1":             {{GPUs: 4, Weight: 1}}, // a job of one pod is a pod
		" 2 x 4 : 3 ":       {{Pods: 2, GPUs: 4, Weight: 3}},
		"100000x1:1":        {{Pods: MaxJobPods, GPUs: 1, Weight: 1}},
	} {
		got, err := ParseMix(in)
		if err != nil {
			t.Errorf("ParseMix(%q): %v", in, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseMix(%q) (-want +got):\n%s", in, diff)
		}
	}
	for _, bad := range []string{"0x4:1", "x4:1", "2x:1", "2x4", "-1x4:1", "2x4x4:1", "2x0:1", "100001x1:1",
		"9223372036854775808x1:1", "2x4:-1", "2x4:NaN", "2X4:1", "2x4:1,", "x:1"} {
		if got, err := ParseMix(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseMix(%q) = %v, %v; want ErrConfig", bad, got, err)
		}
	}
	if !multiPod([]MixEntry{{GPUs: 1, Weight: 1}, {Pods: 2, GPUs: 4, Weight: 1}}) || multiPod([]MixEntry{{GPUs: 1, Weight: 1}, {Pods: 2, GPUs: 4}}) {
		t.Error("multiPod: a job shape of weight 0 draws no job")
	}
}

// FuzzParseMix: any input is either refused with ErrConfig or gives
// entries within bounds that print back to themselves; it never panics.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"uniform", "jobs", "1:4,2:2,4:1,8:1", "2x4:1", "1:2,2x4:1,4x4:1", "1x4:1", "0x4:1", "2x4x4:1",
		"99999999999999999999x1:1", "2x4:1e309", " 3 x 2 : 0.5 ", ":", "x", "2x4:", "8:1", "1:1e308,2:1e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mix, err := ParseMix(s)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("ParseMix(%q): %v, want ErrConfig", s, err)
			}
			return
		}
		parts := make([]string, len(mix))
		for i, m := range mix {
			if m.GPUs < 1 || m.Weight < 0 || math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) || m.Pods == 1 || m.Pods < 0 || m.Pods > MaxJobPods {
				t.Fatalf("ParseMix(%q): entry %+v out of bounds", s, m)
			}
			parts[i] = m.String()
		}
		back, err := ParseMix(strings.Join(parts, ","))
		if err != nil {
			t.Fatalf("ParseMix(%q) printed as %q: %v", s, strings.Join(parts, ","), err)
		}
		if diff := cmp.Diff(mix, back); diff != "" {
			t.Fatalf("ParseMix(%q) printed and read back (-first +back):\n%s", s, diff)
		}
	})
}
