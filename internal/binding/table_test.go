package binding

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	v, tp := testView(t, "dgx-h100", 1)
	s := newTestStore(t, v, Options{})
	g := tp.GPUs[3]
	res, err := s.Bind(context.Background(), Request{Pod: PodRef{Namespace: "ml", Name: "trainer"}, By: ByAgent,
		Containers: []ContainerTokens{{Name: "main", Tokens: freeTokens(t, s, v, g.NUMA, 1, map[string]bool{}), GPUs: []string{g.PCI}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := s.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	d, _ := v.Pools[0].Device(res.Bindings[0].Device)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "Late bindings (") || !strings.HasSuffix(lines[0], "): 1") {
		t.Fatalf("table:\n%s", out.String())
	}
	f := strings.Fields(lines[2])
	want := []string{testResource, res.Bindings[0].Token, d.ID, d.RDMA, "ml/trainer", "main", "agent", res.Bindings[0].Class, g.PCI}
	if strings.Join(f, " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want %q", f, want)
	}
}
