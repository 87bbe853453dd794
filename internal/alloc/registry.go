package alloc

import (
	"fmt"
	"strings"
)

// Names returns the names ByName accepts, in the order they are shown: the
// two baselines that model today's clusters, then Railyard's policies.
func Names() []string {
	return []string{"kubelet", "numa", "spread", "gpu-aware", "packed", "optimal"}
}

// ByName returns a new policy: "kubelet", "numa" (seed 0), "spread",
// "gpu-aware", "packed" or "optimal".
func ByName(name string) (Policy, error) {
	switch name {
	case "kubelet":
		return NewKubelet(), nil
	case "numa":
		return NewNUMA(0), nil
	case "spread":
		return NewSpread(), nil
	case "gpu-aware":
		return NewGPUAware(), nil
	case "packed":
		return NewPacked(), nil
	case "optimal":
		return NewOptimal(), nil
	}
	return nil, fmt.Errorf("alloc: unknown policy %q (want one of %s)", name, strings.Join(Names(), ", "))
}
