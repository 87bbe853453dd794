package doctor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/railyard-io/railyard/api/nodesetup/v1alpha1"
	"github.com/railyard-io/railyard/internal/fakesysfs"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/sysfs"
)

// checkOf returns the check id has for subject, failing the test when
// there is none.
func checkOf(t *testing.T, r Report, id, subject string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.ID == id && c.Subject == subject {
			return c
		}
	}
	var buf bytes.Buffer
	_ = r.WriteTable(&buf)
	t.Fatalf("no %s check of %q:\n%s", id, subject, buf.String())
	return Check{}
}

// The traffic class each port of the ready node gets, changed one way per
// case on mlx5_1 port 1 (ens42np0): the status, what the summary, the
// read lines and the fix say.
func TestRoCEDSCPJudgesTheTrafficClass(t *testing.T) {
	t.Parallel()
	setTC := func(tc fakesysfs.TrafficClass) func(e *env) {
		return func(e *env) {
			if err := fakesysfs.SetTrafficClass(e.sys, "mlx5_1", 1, tc); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	tcFile := func(e *env) string { return filepath.Join(e.sys, "class/infiniband/mlx5_1/tc/1/traffic_class") }
	cnpFile := func(e *env) string { return filepath.Join(e.sys, "class/net/ens42np0/ecn/roce_np/cnp_dscp") }
	write := func(p func(e *env) string, content string) func(e *env) {
		return func(e *env) {
			if err := os.WriteFile(p(e), []byte(content), 0o644); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	fifo := func(p func(e *env) string) func(e *env) {
		return func(e *env) {
			_ = os.Remove(p(e))
			if err := syscall.Mkfifo(p(e), 0o644); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	for name, tc := range map[string]struct {
		change  func(e *env)
		status  Status
		summary string
		read    string // in one of the read lines ("" = not checked)
		fix     string // in the fix ("" = no fix expected)
	}{
		"ready: NVIDIA's recipe": {func(*env) {}, OK,
			"RoCE tclass 106 (global): DSCP 26, priority 3 (PFC on); CNPs DSCP 48 (priority 6), 802.1p priority 6", "RoCE DSCP 26 -> priority 3 (the APP table)", ""},
		// Unset is each QP's own class, 0 by default: judged as 0.
		"unset: DSCP 0 on a lossy priority": {setTC(fakesysfs.TrafficClass{Global: -1}), Fail,
			"RoCE traffic (tclass unset, so each QP's own: 0 by default, unless the application sets one (NCCL_IB_TC, rdma_cm's ToS)) has DSCP 0 and lands on priority 0, which has no PFC while the NIC's PFC (on 3) is lossless",
			"traffic_class: unset", "write 106 to class/infiniband/mlx5_1/tc/1/traffic_class in sysfs (DSCP 26, priority 3), or have the applications set it (NCCL_IB_TC=106)"},
		"DSCP 40 on priority 5, without PFC": {setTC(fakesysfs.TrafficClass{Global: 160}), Fail,
			"RoCE traffic (tclass 160 (global)) has DSCP 40 and lands on priority 5, which has no PFC",
			"RoCE DSCP 40 -> priority 5 (not in the APP table: mlx5's default map, DSCP>>3)", "mlnx_qos -i ens42np0 --dscp2prio set,40,3"},
		"DSCP 24: priority 3 by the default map": {setTC(fakesysfs.TrafficClass{Global: 96}), OK,
			"RoCE tclass 96 (global): DSCP 24, priority 3 (PFC on)", "not in the APP table: mlx5's default map", ""},
		"DSCP 40 mapped to priority 3": {func(e *env) {
			setTC(fakesysfs.TrafficClass{Global: 160})(e)
			e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8, PFC: 1 << 3, DSCP: map[uint8]uint8{26: 3, 40: 3}}
		}, OK, "RoCE tclass 160 (global): DSCP 40, priority 3 (PFC on)", "RoCE DSCP 40 -> priority 3 (the APP table)", ""},
		// The global class overrides the rules; without it the rules
		// apply, and QPs no rule matches keep 0.
		"rules under a global class": {setTC(fakesysfs.TrafficClass{Global: 106, Rules: []string{"dst_ip=10.0.0.0/8,tclass=160"}}), OK,
			"RoCE tclass 106 (global): DSCP 26, priority 3 (PFC on); CNPs", "", ""},
		"rules without a global class": {setTC(fakesysfs.TrafficClass{Global: -1, Rules: []string{"dst_ip=10.0.0.0/8,tclass=106"}}), Fail,
			"has DSCP 0 and lands on priority 0, which has no PFC", "dst_ip=10.0.0.0/8,tclass=106", "write 106"},
		// No lossless intent: reported, not judged.
		"PFC off everywhere": {func(e *env) { e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8, DSCP: map[uint8]uint8{26: 3}} }, OK,
			"DSCP 26, priority 3 (PFC off on every priority: lossy)", "", ""},
		// Against the policy's qos, the intent.
		"the policy wants PFC on 4": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{PCIAddress: "0000:2a:00.0", QoS: &v1alpha1.QoS{Trust: "dscp", PFC: []int{4}, ECN: []int{4}}})
		}, Fail, "lands on priority 3, which has no PFC while the policy's qos (PFC on 4) is lossless", "", "write 130 to class/infiniband/mlx5_1/tc/1/traffic_class"},
		"the policy is lossy by design": {func(e *env) {
			e.opt.Policy.PFs = append(e.opt.Policy.PFs, v1alpha1.PF{PCIAddress: "0000:2a:00.0", QoS: &v1alpha1.QoS{Trust: "dscp", PFC: []int{}}})
		}, OK, "priority 3 (PFC off on every priority: lossy)", "", ""},
		// What cannot be judged is skipped, saying why.
		"trust pcp": {func(e *env) { e.opt.DCB.(fakeDCB)["ens42np0"] = netops.DCB{PFCCap: 8, PFC: 1 << 3} }, Skip,
			"trust pcp: the VLAN priority, not the DSCP, chooses the priority", "", ""},
		"no DCB": {func(e *env) { delete(e.opt.DCB.(fakeDCB), "ens42np0") }, Skip,
			"PFC and trust not read (roce-qos says why); the priority is not judged. RoCE tclass 106 (global): DSCP 26; CNPs DSCP 48, 802.1p priority 6", "", ""},
		"no DCB reader": {func(e *env) { e.opt.DCB = nil }, Skip, "no DCB netlink reader", "", ""},
		"no tc/ (upstream mlx5)": {func(e *env) { _ = fakesysfs.RemoveTrafficClass(e.sys, "mlx5_1") }, Skip,
			"no tc/<port>/traffic_class (MLNX_OFED's mlx5 has one", "traffic_class: none", ""},
		// A file that is not a traffic class is never ok.
		"garbled traffic_class": {write(tcFile, "Global tclass=lots\n"), Skip, "cannot read the RoCE traffic class", "invalid syntax", ""},
		"binary traffic_class":  {write(tcFile, "\x00\x01\xfe\n"), Skip, "cannot read the RoCE traffic class", "", ""},
		"huge traffic_class":    {write(tcFile, strings.Repeat("x", 5000)), Skip, "larger than 4096 bytes", "", ""},
		"FIFO traffic_class":    {fifo(tcFile), Skip, "not a regular file (a FIFO)", "", ""},
		// CNPs: absent is reported; unreadable is never ok.
		"no CNP files": {func(e *env) { _ = fakesysfs.RemoveECN(e.sys, "ens42np0") }, OK,
			"CNPs not exposed", "none (MLNX_OFED's mlx5 has them; an upstream kernel's keeps them in debugfs", ""},
		"CNPs elsewhere": {func(e *env) {
			_ = fakesysfs.SetECN(e.sys, "ens42np0", fakesysfs.ECN{RP: 0xff, NP: 0xff, CNPDSCP: 26, CNPPrio: 3})
		}, OK,
			"CNPs DSCP 26 (priority 3), 802.1p priority 3", "CNP DSCP 26 -> priority 3 (the APP table)", ""},
		"garbled cnp_dscp": {write(cnpFile, "48 or so\n"), Skip, "CNP settings unreadable", "invalid syntax", ""},
		"FIFO cnp_dscp":    {fifo(cnpFile), Skip, "CNP settings unreadable", "a FIFO", ""},
		"garbled cnp_dscp and a lossy class": {func(e *env) {
			write(cnpFile, "x\n")(e)
			setTC(fakesysfs.TrafficClass{Global: 0})(e)
		}, Fail, "tclass 0 (global)) has DSCP 0 and lands on priority 0", "invalid syntax", "write 106"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.change(e)
			start := time.Now()
			r := e.run()
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("doctor took %v", took)
			}
			c := checkOf(t, r, "roce-dscp", "mlx5_1/1")
			if c.Status != tc.status || !strings.Contains(c.Summary, tc.summary) {
				t.Errorf("%s %q\nwant %s with %q", c.Status, c.Summary, tc.status, tc.summary)
			}
			if tc.read != "" && !strings.Contains(strings.Join(c.Read, "\n"), tc.read) {
				t.Errorf("read %q, want %q in it", c.Read, tc.read)
			}
			if (tc.fix == "") != (c.Fix == "") || !strings.Contains(c.Fix, tc.fix) {
				t.Errorf("fix %q, want %q", c.Fix, tc.fix)
			}
			// The other RoCE port is untouched.
			if o := checkOf(t, r, "roce-dscp", "mlx5_2/1"); tc.status != Skip && o.Status != OK && name != "no DCB reader" {
				t.Errorf("mlx5_2/1: %s %q", o.Status, o.Summary)
			}
		})
	}
}

// The ports of the node agree, or the consistency check warns, naming
// each port's values; a port whose files could not be read is left out.
func TestRoCEDSCPConsistentAcrossNICs(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		change  func(e *env)
		status  Status // "" = no consistency check
		summary string
		read    string
	}{
		"alike": {func(*env) {}, OK, "2 RoCE ports alike: RoCE DSCP 26 (global); CNPs DSCP 48, 802.1p priority 6", "mlx5_2/1: RoCE DSCP 26 (global); CNPs DSCP 48, 802.1p priority 6 (traffic_class Global tclass=106)"},
		// 104 and 106 are one DSCP: mlx5 does not take the ECN bits.
		"one DSCP, other ECN bits": {func(e *env) { _ = fakesysfs.SetTrafficClass(e.sys, "mlx5_2", 1, fakesysfs.TrafficClass{Global: 104}) }, OK, "alike", "(traffic_class Global tclass=104)"},
		"another data DSCP": {func(e *env) {
			_ = fakesysfs.SetTrafficClass(e.sys, "mlx5_2", 1, fakesysfs.TrafficClass{Global: 96})
		}, Warn, "the node's RoCE ports mark RoCE traffic or CNPs differently", "mlx5_2/1: RoCE DSCP 24 (global)"},
		"unset on one": {func(e *env) {
			_ = fakesysfs.SetTrafficClass(e.sys, "mlx5_2", 1, fakesysfs.TrafficClass{Global: -1})
		}, Warn, "differently", "mlx5_2/1: RoCE DSCP 0 (unset)"},
		"another CNP DSCP": {func(e *env) {
			_ = fakesysfs.SetECN(e.sys, "ens59np0", fakesysfs.ECN{RP: 0xff, NP: 0xff, CNPDSCP: 46, CNPPrio: 6})
		}, Warn, "differently", "mlx5_2/1: RoCE DSCP 26 (global); CNPs DSCP 46, 802.1p priority 6"},
		"another CNP priority": {func(e *env) {
			_ = fakesysfs.SetECN(e.sys, "ens59np0", fakesysfs.ECN{RP: 0xff, NP: 0xff, CNPDSCP: 48, CNPPrio: 7})
		}, Warn, "differently", "802.1p priority 7"},
		"CNPs exposed on one only": {func(e *env) { _ = fakesysfs.RemoveECN(e.sys, "ens59np0") }, Warn, "differently", "CNPs not exposed"},
		"one unreadable": {func(e *env) {
			_ = os.WriteFile(filepath.Join(e.sys, "class/net/ens59np0/ecn/roce_np/cnp_802p_prio"), []byte("?\n"), 0o644)
		}, "", "", ""},
		"one without tc/": {func(e *env) { _ = fakesysfs.RemoveTrafficClass(e.sys, "mlx5_2") }, "", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.change(e)
			r := e.run()
			var got []Check
			for _, c := range r.Checks {
				if c.ID == "roce-dscp-consistent" {
					got = append(got, c)
				}
			}
			if tc.status == "" {
				if len(got) != 0 {
					t.Errorf("a consistency check over fewer than two ports: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d consistency checks, want 1", len(got))
			}
			c := got[0]
			if c.Status != tc.status || !strings.Contains(c.Summary, tc.summary) || !strings.Contains(strings.Join(c.Read, "\n"), tc.read) {
				t.Errorf("%s %q read %q\nwant %s with %q and %q read", c.Status, c.Summary, c.Read, tc.status, tc.summary, tc.read)
			}
			if (c.Status == Warn) != strings.Contains(c.Fix, "the same class/infiniband/<dev>/tc/<port>/traffic_class") {
				t.Errorf("fix %q", c.Fix)
			}
		})
	}
}

// A traffic class's DSCP is its upper six bits; under trust dscp its
// priority is the APP table's, else mlx5's default map (DSCP>>3).
func TestTClassToDSCPAndPriority(t *testing.T) {
	t.Parallel()
	remapped := netops.DCB{DSCP: map[uint8]uint8{26: 5, 48: 3}}
	for _, tc := range []struct {
		tclass   int
		dcb      netops.DCB
		dscp     int
		prio     int
		fromAPPs bool
	}{
		{0, netops.DCB{}, 0, 0, false},
		{2, netops.DCB{}, 0, 0, false},
		{96, netops.DCB{}, 24, 3, false},
		{104, netops.DCB{}, 26, 3, false},
		{106, netops.DCB{}, 26, 3, false},
		{106, lossless, 26, 3, true},
		{106, remapped, 26, 5, true},
		{160, netops.DCB{}, 40, 5, false},
		{184, netops.DCB{}, 46, 5, false},
		{192, netops.DCB{}, 48, 6, false},
		{192, remapped, 48, 3, true},
		{236, netops.DCB{}, 59, 7, false},
		{255, netops.DCB{}, 63, 7, false},
	} {
		dscp := sysfs.TClassDSCP(tc.tclass)
		prio, from := dscpPrio(tc.dcb, dscp)
		if dscp != tc.dscp || prio != tc.prio || (from == "the APP table") != tc.fromAPPs {
			t.Errorf("tclass %d: DSCP %d priority %d (%s), want DSCP %d priority %d (APP table %v)", tc.tclass, dscp, prio, from, tc.dscp, tc.prio, tc.fromAPPs)
		}
	}
}

// The ready node has a roce-dscp line per RoCE port and none for the
// InfiniBand one.
func TestRoCEDSCPOnlyOnRoCEPorts(t *testing.T) {
	t.Parallel()
	r := newEnv(t).run()
	var subjects []string
	for _, c := range r.Checks {
		if c.ID == "roce-dscp" {
			subjects = append(subjects, c.Subject)
			if c.Status != OK {
				t.Errorf("%s: %s %q", c.Subject, c.Status, c.Summary)
			}
		}
	}
	if strings.Join(subjects, " ") != "mlx5_1/1 mlx5_2/1" {
		t.Errorf("roce-dscp subjects %q, want mlx5_1/1 mlx5_2/1", subjects)
	}
}
