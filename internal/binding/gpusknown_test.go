package binding

import "testing"

// TestGPUsKnown: a request read while kubelet allocates can bind early
// only when every token-holding container lists GPUs, or its pool's policy
// does not place by them.
func TestGPUsKnown(t *testing.T) {
	v, _ := testView(t, "dgx-h100", 2)
	tok := manyTokens(v, 0, 3)
	spread := *v
	spread.Pools = []Pool{v.Pools[0]}
	spread.Pools[0].Policy = "spread"
	for _, tc := range []struct {
		name string
		v    *View
		req  Request
		want bool
	}{
		{"tokens and GPUs", v, Request{Containers: []ContainerTokens{{Name: "a", Tokens: tok[:1], GPUs: []string{"0000:18:00.0"}}}}, true},
		{"tokens, no GPUs yet, gpu-aware", v, Request{Containers: []ContainerTokens{{Name: "a", Tokens: tok[:1]}}}, false},
		{"tokens, no GPUs, spread (does not need them)", &spread, Request{Containers: []ContainerTokens{{Name: "a", Tokens: tok[:1]}}}, true},
		{"one container with, one without GPUs", v, Request{Containers: []ContainerTokens{
			{Name: "a", Tokens: tok[:1], GPUs: []string{"0000:18:00.0"}}, {Name: "b", Tokens: tok[1:2]}}}, false},
		{"a GPU-only container and a token-only one", v, Request{Containers: []ContainerTokens{
			{Name: "gpu", GPUs: []string{"0000:18:00.0"}}, {Name: "nic", Tokens: tok[1:2]}}}, false},
		{"GPUs but no tokens", v, Request{Containers: []ContainerTokens{{Name: "a", GPUs: []string{"0000:18:00.0"}}}}, true},
		{"a token of no pool", v, Request{Containers: []ContainerTokens{{Name: "a", Tokens: []string{Token("nopool00", 0, 0)}}}}, false},
		{"not a token", v, Request{Containers: []ContainerTokens{{Name: "a", Tokens: []string{"0000:18:00.1"}}}}, false},
		{"no containers", v, Request{}, false},
	} {
		if got := GPUsKnown(tc.req, tc.v); got != tc.want {
			t.Errorf("%s: GPUsKnown = %v, want %v", tc.name, got, tc.want)
		}
	}
}
