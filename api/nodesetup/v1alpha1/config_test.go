package v1alpha1

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/railyard-io/railyard/internal/inputfile"
)

func TestLoadValidFull(t *testing.T) {
	t.Parallel()
	p, err := Load(filepath.Join("testdata", "valid-full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.SysfsRoot != "/host/sys" || len(p.PFs) != 2 {
		t.Fatalf("policy = %+v", p)
	}
	ib, eth := p.PFs[0], p.PFs[1]
	if ib.VFDriver != DriverKernel || ib.GUIDs != AddressDerived || ib.MACs != AddressDerived || ib.PKey != "0x8001" {
		t.Errorf("IB PF defaults = %+v", ib)
	}
	if eth.VFDriver != DriverVFIO || eth.MACs != AddressKeep || eth.Name() != "ens1f0" {
		t.Errorf("Ethernet PF = %+v", eth)
	}
}

func TestLoadValidMinimalDefaults(t *testing.T) {
	t.Parallel()
	p, err := Load(filepath.Join("testdata", "valid-minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.SysfsRoot != "/sys" || p.CNIStateDir != "" || p.PFs[0].NumVFs != 8 || p.PFs[0].VFDriver != "kernel" {
		t.Fatalf("policy = %+v", p)
	}
}

func TestLoadInvalidUnknownField(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join("testdata", "invalid-unknown-field.yaml"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "num_vfs") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadInvalidManyReportsEveryFieldPath(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join("testdata", "invalid-many.yaml"))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{
		"kind: Unsupported value: \"AgentConfig\"",
		"sysfsRoot: Invalid value",
		"pfs[0]: Required value: pciAddress or netdev",
		"pfs[1].netdev: Invalid value: \"ibp24s0\": give pciAddress or netdev, not both",
		"pfs[2].pciAddress: Invalid value",
		"pfs[2].numVFs: Invalid value: -1",
		"pfs[2].vfDriver: Unsupported value: \"igb_uio\"",
		"pfs[3].linkLayer: Unsupported value: \"ethernet\"",
		"pfs[3].guids: Unsupported value: \"random\"",
		"pfs[3].macs: Unsupported value: \"random\"",
		"pfs[4]: Duplicate value: \"ens1f0 (also pfs[3])\"",
		"pfs[4].pkey: Invalid value: \"0xffff\"",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParsePKey(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]uint16{"0x8001": 0x8001, "7ffe": 0x7ffe, "0X0002": 2} {
		if got, err := ParsePKey(s); err != nil || got != want {
			t.Errorf("ParsePKey(%q) = %#x, %v; want %#x", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0x", "0x0000", "0x8000", "0xffff", "0x7fff", "0x10000", "zz", "-1"} {
		if _, err := ParsePKey(s); err == nil {
			t.Errorf("ParsePKey(%q) accepted", s)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- netdev: a\n  numVFs: 2\n"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err == nil && (p.APIVersion != APIVersion || len(Validate(p)) != 0) {
			t.Fatalf("accepted an invalid policy %+v", p)
		}
	})
}

func TestCheckResolvedNamesBothEntriesOfOnePF(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n" +
		"- pciAddress: \"0000:2a:00.0\"\n  numVFs: 3\n- netdev: ib0\n  numVFs: 1\n- netdev: ens42np0\n  numVFs: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckResolved(p, []string{"0000:2a:00.0", "", "0000:3b:00.0"}); err != nil {
		t.Fatalf("distinct PFs refused: %v", err)
	}
	err = CheckResolved(p, []string{"0000:2a:00.0", "", "0000:2a:00.0"})
	want := `invalid node policy:
  pfs[2]: Duplicate value: "netdev ens42np0 is PF 0000:2a:00.0, which pfs[0] (pciAddress 0000:2a:00.0) names too"`
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Fatalf("error (-want +got):\n%s", diff)
	}
}

func TestLoadReadsOnlyABoundedRegularFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "policy.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{"/dev/zero": inputfile.ErrNotRegular, fifo: inputfile.ErrNotRegular} {
		if _, err := Load(path); !errors.Is(err, want) {
			t.Errorf("Load(%s) = %v, want %v", path, err, want)
		}
	}
}

func TestQoSDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- netdev: ens1f0np0\n  numVFs: 0\n  linkLayer: Ethernet\n  qos: {pfc: [3]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&QoS{Trust: TrustDSCP, PFC: []int{3}, ECN: []int{3}}, p.PFs[0].QoS); diff != "" {
		t.Errorf("defaults (-want +got)\n%s", diff)
	}
	if b := Bits([]int{3, 5}); b != 0x28 {
		t.Errorf("Bits = %#x", b)
	}
	_, err = Parse([]byte("apiVersion: railyard.io/v1alpha1\nkind: NodePolicy\npfs:\n- netdev: ib0\n  numVFs: 0\n  linkLayer: InfiniBand\n  qos: {trust: tos, pfc: [3, 3, 8], ecn: [-1]}\n"))
	for _, want := range []string{
		"pfs[0].qos: Invalid value: \"\": PFC, trust and ECN are RoCE (Ethernet) settings",
		"pfs[0].qos.trust: Unsupported value: \"tos\"",
		"pfs[0].qos.pfc[1]: Duplicate value: 3",
		"pfs[0].qos.pfc[2]: Invalid value: 8",
		"pfs[0].qos.ecn[0]: Invalid value: -1",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
