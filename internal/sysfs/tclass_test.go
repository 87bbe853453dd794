package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTrafficClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     TrafficClass
		wantErr  string
	}{
		// What traffic_class_show prints (MLNX_OFED main_ext.c).
		{name: "unset: an empty file", in: "", want: TrafficClass{Global: -1}},
		{name: "global", in: "Global tclass=106\n", want: TrafficClass{Global: 106}},
		{name: "global 0", in: "Global tclass=0\n", want: TrafficClass{Global: 0}},
		{name: "global and rules", in: "Global tclass=106\ndst_ip=10.0.0.0/8,tclass=96\nsrc_ip=10.0.0.1,dst_ip=10.1.0.0/16,tclass=104\n",
			want: TrafficClass{Global: 106, Rules: []TrafficClassRule{{Match: "dst_ip=10.0.0.0/8", TClass: 96}, {Match: "src_ip=10.0.0.1,dst_ip=10.1.0.0/16", TClass: 104}}}},
		{name: "rule only", in: "dst_ip6=fd00::1,tclass=160\n", want: TrafficClass{Global: -1, Rules: []TrafficClassRule{{Match: "dst_ip6=fd00::1", TClass: 160}}}},
		// Garbled.
		{name: "bare number", in: "106\n", wantErr: `want "Global tclass=<n>"`},
		{name: "not a number", in: "Global tclass=abc\n", wantErr: "invalid syntax"},
		{name: "too large", in: "Global tclass=256\n", wantErr: "want 0 to 255"},
		{name: "negative", in: "Global tclass=-1\n", wantErr: "want 0 to 255"},
		{name: "two globals", in: "Global tclass=1\nGlobal tclass=2\n", wantErr: "a second Global line"},
		{name: "unknown match", in: "vlan=3,tclass=96\n", wantErr: "unknown match"},
		{name: "empty match", in: "dst_ip=,tclass=96\n", wantErr: "unknown match"},
		{name: "binary", in: "\x00\xff\n", wantErr: "traffic_class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTrafficClass(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one with %q (got %+v)", err, tc.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// The DSCP of a traffic class is its upper six bits (tclass_update_qp).
func TestTClassDSCP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tclass, dscp int }{{0, 0}, {3, 0}, {96, 24}, {104, 26}, {106, 26}, {160, 40}, {192, 48}, {236, 59}, {255, 63}} {
		if got := TClassDSCP(tc.tclass); got != tc.dscp {
			t.Errorf("TClassDSCP(%d) = %d, want %d", tc.tclass, got, tc.dscp)
		}
	}
}

func TestRoCETrafficClass(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "class/infiniband/mlx5_1/tc")
	write := func(port, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, port), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, port, "traffic_class"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1", "Global tclass=106\n")
	write("2", "")
	write("3", "Global tclass=x\n")
	write("4", strings.Repeat("Global tclass=106\n", 300))
	if err := os.MkdirAll(filepath.Join(dir, "5"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "5/traffic_class"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := New(root)
	if got, err := fs.RoCETrafficClass("mlx5_1", 1); err != nil || got.Global != 106 {
		t.Errorf("port 1: %+v, %v", got, err)
	}
	if got, err := fs.RoCETrafficClass("mlx5_1", 2); err != nil || got.Set() || got.Global != -1 {
		t.Errorf("port 2 (empty): %+v, %v", got, err)
	}
	if _, err := fs.RoCETrafficClass("mlx5_1", 3); err == nil || !strings.Contains(err.Error(), "tc/3/traffic_class") {
		t.Errorf("garbled: %v, want an error naming the file", err)
	}
	if _, err := fs.RoCETrafficClass("mlx5_1", 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("5400 bytes: %v, want ErrTooLarge", err)
	}
	if _, err := fs.RoCETrafficClass("mlx5_1", 5); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := fs.RoCETrafficClass("mlx5_1", 6); !errors.Is(err, ErrNotFound) {
		t.Errorf("no port 6: %v, want ErrNotFound", err)
	}
	if _, err := fs.RoCETrafficClass("mlx5_0", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("no tc/: %v, want ErrNotFound", err)
	}
	for _, bad := range []struct {
		dev  string
		port int
	}{{"../x", 1}, {"", 1}, {"mlx5_1", 0}} {
		if _, err := fs.RoCETrafficClass(bad.dev, bad.port); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%q port %d: %v, want an invalid-name error", bad.dev, bad.port, err)
		}
	}
}

func TestRoCECNP(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	np := filepath.Join(root, "class/net/ens1np0/ecn/roce_np")
	if err := os.MkdirAll(np, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(np, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := New(root)
	if _, err := fs.RoCECNP("ens1np0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no files: %v, want ErrNotFound", err)
	}
	write("cnp_dscp", "48\n")
	write("cnp_802p_prio", "6\n")
	got, err := fs.RoCECNP("ens1np0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(CNP{DSCP: 48, Prio: 6}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for _, tc := range []struct{ file, v, want string }{
		{"cnp_dscp", "64\n", "want 0 to 63"},
		{"cnp_dscp", "forty\n", "invalid syntax"},
		{"cnp_802p_prio", "8\n", "want 0 to 7"},
		{"cnp_802p_prio", "-1\n", "want 0 to 7"},
	} {
		write("cnp_dscp", "48\n")
		write("cnp_802p_prio", "6\n")
		write(tc.file, tc.v)
		if _, err := fs.RoCECNP("ens1np0"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s %q: %v, want an error naming the file with %q", tc.file, tc.v, err, tc.want)
		}
	}
	_ = os.Remove(filepath.Join(np, "cnp_dscp"))
	if err := syscall.Mkfifo(filepath.Join(np, "cnp_dscp"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.RoCECNP("ens1np0"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := fs.RoCECNP("a/b"); err == nil {
		t.Error("a name with / read")
	}
}

func FuzzParseTrafficClass(f *testing.F) {
	for _, s := range []string{"", "Global tclass=106\n", "Global tclass=106\ndst_ip=10.0.0.0/8,tclass=96\n", "src_ip6=::1,dst_ip6=::2,tclass=3", "tclass=1", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTrafficClass(s)
		if err != nil {
			return
		}
		if got.Global < -1 || got.Global > 255 {
			t.Errorf("Global %d from %q", got.Global, s)
		}
		for _, r := range got.Rules {
			if r.TClass < 0 || r.TClass > 255 || r.Match == "" {
				t.Errorf("rule %+v from %q", r, s)
			}
		}
	})
}
