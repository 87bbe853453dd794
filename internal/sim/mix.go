package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxJobPods bounds the pods of one job shape: a job of more pods than
// the largest cluster has nodes could never be placed one pod per node.
const MaxJobPods = MaxNodes

// MixEntry is one job shape of the workload and its relative weight: a
// job of Pods pods (0 or 1: a single pod, as every mix before jobs) of
// GPUs GPUs each.
type MixEntry struct {
	GPUs   int
	Weight float64
	Pods   int `json:",omitempty"`
}

// PodCount is the number of pods of the shape (at least 1).
func (m MixEntry) PodCount() int { return max(1, m.Pods) }

// String prints the shape in ParseMix's syntax.
func (m MixEntry) String() string {
	if m.PodCount() > 1 {
		return fmt.Sprintf("%dx%d:%g", m.Pods, m.GPUs, m.Weight)
	}
	return fmt.Sprintf("%d:%g", m.GPUs, m.Weight)
}

// Named workload mixes.
func namedMixes() map[string][]MixEntry {
	return map[string][]MixEntry{
		"uniform": {{GPUs: 1, Weight: 1}, {GPUs: 2, Weight: 1}, {GPUs: 4, Weight: 1}, {GPUs: 8, Weight: 1}},
		"small":   {{GPUs: 1, Weight: 4}, {GPUs: 2, Weight: 2}, {GPUs: 4, Weight: 1}, {GPUs: 8, Weight: 1}},
		"large":   {{GPUs: 1, Weight: 1}, {GPUs: 2, Weight: 1}, {GPUs: 4, Weight: 2}, {GPUs: 8, Weight: 4}},
		// jobs: half of the GPUs in single pods, half in jobs of two and
		// four pods that each take half a node or less (the shapes whose
		// pods can land on different rails).
		"jobs": {{GPUs: 1, Weight: 2}, {GPUs: 8, Weight: 1}, {Pods: 2, GPUs: 4, Weight: 1}, {Pods: 2, GPUs: 2, Weight: 1}, {Pods: 4, GPUs: 4, Weight: 1}},
	}
}

// MixNames returns the names ParseMix accepts besides an explicit list.
func MixNames() []string {
	names := []string{}
	for n := range namedMixes() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParseMix reads a workload mix: a name ("uniform", "small", "large",
// "jobs") or a list of "GPUS:WEIGHT" (a single pod) and "PODSxGPUS:WEIGHT"
// (a job of PODS pods of GPUS GPUs each) entries, such as
// "1:4,2:2,2x4:1,8:1". "1x4:1" is "4:1".
func ParseMix(s string) ([]MixEntry, error) {
	if m, ok := namedMixes()[strings.TrimSpace(s)]; ok {
		return slices.Clone(m), nil
	}
	var out []MixEntry
	for _, part := range strings.Split(s, ",") {
		shape, w, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("%w: mix entry %q: want GPUS:WEIGHT, PODSxGPUS:WEIGHT or one of %s", ErrConfig, part, strings.Join(MixNames(), ", "))
		}
		pods, g := 1, shape
		if p, rest, job := strings.Cut(shape, "x"); job {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 1 || n > MaxJobPods {
				return nil, fmt.Errorf("%w: mix entry %q: pod count must be an integer from 1 to %d", ErrConfig, part, MaxJobPods)
			}
			pods, g = n, rest
		}
		gpus, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil || gpus < 1 {
			return nil, fmt.Errorf("%w: mix entry %q: GPU count must be a positive integer", ErrConfig, part)
		}
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || weight < 0 || math.IsInf(weight, 0) || math.IsNaN(weight) {
			return nil, fmt.Errorf("%w: mix entry %q: weight must be a non-negative number", ErrConfig, part)
		}
		e := MixEntry{GPUs: gpus, Weight: weight}
		if pods > 1 {
			e.Pods = pods
		}
		out = append(out, e)
	}
	return out, nil
}

// multiPod reports whether the mix has jobs of several pods.
func multiPod(mix []MixEntry) bool {
	return slices.ContainsFunc(mix, func(m MixEntry) bool { return m.PodCount() > 1 && m.Weight > 0 })
}
