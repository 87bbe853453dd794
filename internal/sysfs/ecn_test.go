package sysfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoCEECN(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ecn := filepath.Join(root, "class/net/ens1np0/ecn")
	for _, point := range []string{"roce_rp", "roce_np"} {
		if err := os.MkdirAll(filepath.Join(ecn, point, "enable"), 0o755); err != nil {
			t.Fatal(err)
		}
		for p := range 8 {
			v := "0\n"
			if p == 3 || (point == "roce_np" && p == 5) {
				v = "1\n"
			}
			if err := os.WriteFile(filepath.Join(ecn, point, "enable", strconv.Itoa(p)), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	fs := New(root)
	got, err := fs.RoCEECN("ens1np0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ECN{RP: 1 << 3, NP: 1<<3 | 1<<5, CNPDSCP: -1, CNPPrio: -1}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if !got.On(3) || got.On(5) {
		t.Errorf("On: 3 %v, 5 %v", got.On(3), got.On(5))
	}
	if err := os.WriteFile(filepath.Join(ecn, "roce_np/cnp_dscp"), []byte("48\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err = fs.RoCEECN("ens1np0"); err != nil || got.CNPDSCP != 48 || got.CNPPrio != -1 {
		t.Errorf("with cnp_dscp: %+v, %v", got, err)
	}
	if _, err := fs.RoCEECN("ens2np0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no ecn/: %v, want ErrNotFound", err)
	}
	if _, err := fs.RoCEECN("../x"); err == nil {
		t.Error("a name with / read")
	}
}
