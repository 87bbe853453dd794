package binding

import (
	"strings"
	"testing"
)

func TestTokenRoundTrip(t *testing.T) {
	tag := PoolTag("railyard.io/rdma_vf")
	if len(tag) != 8 || PoolTag("railyard.io/rdma_vf") != tag || PoolTag("railyard.io/rdma_pf") == tag {
		t.Fatalf("tag %q not a stable 8-digit digest", tag)
	}
	for _, c := range []struct {
		numa, k int
		want    string
	}{
		{0, 0, "tok-" + tag + "-n0-0"},
		{1, 17, "tok-" + tag + "-n1-17"},
		{-1, 3, "tok-" + tag + "-nx-3"},
		{MaxNUMA, MaxTokenIndex, "tok-" + tag + "-n9999-99999"},
	} {
		id := Token(tag, c.numa, c.k)
		if id != c.want {
			t.Errorf("Token(%d,%d) = %q, want %q", c.numa, c.k, id, c.want)
		}
		if len(id) > 63 {
			t.Errorf("%q longer than kubelet's 63", id)
		}
		got, err := ParseToken(id)
		if err != nil || got.Tag != tag || got.NUMA != c.numa || got.K != c.k || got.String() != id {
			t.Errorf("ParseToken(%q) = %+v, %v", id, got, err)
		}
	}
}

func TestParseTokenRejects(t *testing.T) {
	for _, id := range []string{
		"", "0000:18:00.2", "0000:18:00.0-s3", "tok-", "tok-5c0e1f2a", "tok-5c0e1f2a-n0", "tok-5c0e1f2a-n0-",
		"tok-5C0E1F2A-n0-1", "tok-5c0e1f2g-n0-1", "tok-5c0e1f2a-n00-1", "tok-5c0e1f2a-n0-01", "tok-5c0e1f2a-n-1-1",
		"tok-5c0e1f2a-n0-100000", "tok-5c0e1f2a-n10000-1", "tok-5c0e1f2a-x0-1", "tok-5c0e1f2a-n0-1-2", "tok-5c0e1f2-n0-1",
	} {
		if _, err := ParseToken(id); err == nil {
			t.Errorf("ParseToken(%q) accepted", id)
		} else if !strings.Contains(err.Error(), "not a token") {
			t.Errorf("ParseToken(%q): %v", id, err)
		}
	}
}

// FuzzParseToken: never panics, and what it accepts has exactly one
// spelling (Token gives the input back).
func FuzzParseToken(f *testing.F) {
	f.Add("tok-5c0e1f2a-n0-7")
	f.Add("tok-5c0e1f2a-nx-99999")
	f.Add("0000:18:00.0-s3")
	f.Add("tok-5c0e1f2a-n0-1-")
	f.Fuzz(func(t *testing.T, id string) {
		got, err := ParseToken(id)
		if err != nil {
			return
		}
		if got.String() != id {
			t.Fatalf("ParseToken(%q) = %+v, which prints as %q", id, got, got.String())
		}
		if len(id) > 63 {
			t.Fatalf("accepted %q, longer than 63", id)
		}
	})
}

func TestGPUPCI(t *testing.T) {
	v := &View{GPUMap: map[string]string{"GPU-1": "0000:1b:00.0"}}
	for id, want := range map[string]string{
		"GPU-1": "0000:1b:00.0", "0000:1B:00.0": "0000:1b:00.0", "00000000:1B:00.0": "0000:1b:00.0",
		"GPU-2": "", "0000:1b:00.8": "", "0000:1b:20.0": "", "0001:1b:00": "", "zzzz:1b:00.0": "",
		"00010000:1b:00.0": "10000:1b:00.0", // nvidia-smi's form of a GPU behind Intel VMD
	} {
		got, ok := v.gpuPCI(id)
		if got != want || ok != (want != "") {
			t.Errorf("gpuPCI(%q) = %q, %v; want %q", id, got, ok, want)
		}
	}
}
