package bench

import (
	"encoding/json"
	"strings"
	"testing"
)

const mibHeader = ` #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
`

func TestPerftestMiBConvertedToGbps(t *testing.T) {
	// The bare-metal vs pod example from the issue: 4363.17 vs 4362.49 MB/s.
	r := ParsePerftest([]byte("RDMA_Write BW Test\n" + mibHeader +
		" 65536      5000           4363.17            4362.49              0.069800\n"))
	if !r.OK || r.Tool != "ib_write_bw" || len(r.PerftestBW) != 1 {
		t.Fatalf("got %+v", r)
	}
	row := r.PerftestBW[0]
	if !near(row.BWAvgGbps, 4362.49*0.008388608) || !near(*row.BWPeakGbps, 4363.17*0.008388608) {
		t.Errorf("row = %+v, want MiB/s x 0.008388608", row)
	}
	// Old perftest labels MiB/s as MB/sec: same factor.
	old := ParsePerftest([]byte(strings.ReplaceAll(mibHeader, "MiB/sec", "MB/sec") + " 65536 5000 1000.00 1000.00 0.01\n"))
	if !near(old.PerftestBW[0].BWAvgGbps, 8.388608) {
		t.Errorf("MB/sec row = %+v", old.PerftestBW[0])
	}
}

func TestLauncherPrefixesStripped(t *testing.T) {
	body := `# Collective test starting: all_gather_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576         16384     float    none      -1    50.00   20.97   18.35      0    49.00   21.40   18.73      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 18.54
`
	for _, prefix := range []string{"0: ", "[1,0]<stdout>:", "[1,0]<stdout>: ", "[pod/nccl-launcher-x/launcher] "} {
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
			b.WriteString(prefix + l + "\n")
		}
		r := Parse([]byte(b.String()))
		if r.Tool != "all_gather_perf" || !r.OK || len(r.NCCL) != 1 || r.NCCL[0].Redop != "none" || !near(r.NCCL[0].IPBusBWGBps, 18.73) {
			t.Errorf("prefix %q: got %+v", prefix, r)
		}
	}
}

func TestNCCLFailures(t *testing.T) {
	header := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	tests := []struct {
		name, in, err string
	}{
		{"wrong results", header + "     1048576        262144     float     sum      -1    95.20   11.01   20.65      3    94.70   11.07   20.76      0\n# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 20.7\n",
			"# Out of bounds values : 3 FAILED"},
		{"wrong in-place only, no footer", header + "     1048576        262144     float     sum      -1    95.20   11.01   20.65      0    94.70   11.07   20.76      2\n",
			"2 wrong elements in-place at 1048576 bytes"},
		{"mpi abort", header + "     1048576        262144     float     sum      -1    95.20   11.01   20.65      0    94.70   11.07   20.76      0\nMPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\n",
			"MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD"},
	}
	for _, tc := range tests {
		r := ParseNCCL([]byte(tc.in))
		if r.OK || r.Error != tc.err || len(r.NCCL) != 1 {
			t.Errorf("%s: ok=%v error=%q rows=%d, want error %q", tc.name, r.OK, r.Error, len(r.NCCL), tc.err)
		}
	}
	// A WARN in a run that printed its footer is not a failure.
	r := ParseNCCL([]byte(header + "host:1:2 [0] misc/ibvwrap.cc:1 NCCL WARN something odd\n     8     2     float     sum      -1    10.0   0.00   0.00      0    10.0   0.00   0.00      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0\n"))
	if !r.OK || r.Error != "" {
		t.Errorf("warn with clean footer: ok=%v error=%q", r.OK, r.Error)
	}
}

func TestNCCLErrorEraWithoutRoot(t *testing.T) {
	// nccl-tests 2.0-era layout: no root column, float "error" instead of #wrong.
	in := `#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
     8388608       2097152   float     sum    195.4   42.93   75.13  5e-07    194.2   43.19   75.58  5e-07
# Out of bounds values : 0 OK
`
	r := ParseNCCL([]byte(in))
	if !r.OK || len(r.NCCL) != 1 {
		t.Fatalf("got %+v", r)
	}
	row := r.NCCL[0]
	if row.Bytes != 8388608 || !near(row.OOPBusBWGBps, 75.13) || !near(row.IPTimeUs, 194.2) || row.OOPWrong != nil {
		t.Errorf("row = %+v", row)
	}
}

func TestPerftestOldLatencyAndDurationLayouts(t *testing.T) {
	r := ParsePerftest([]byte("                    RDMA_Write Latency Test\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2       1000          0.91           5.70         0.94\n"))
	if r.Tool != "ib_write_lat" || len(r.PerftestLat) != 1 || r.PerftestLat[0].LatAvgUs != nil || !near(*r.PerftestLat[0].LatTypicalUs, 0.94) {
		t.Errorf("5-column layout: %+v", r)
	}
	d := ParsePerftest([]byte(" #bytes        #iterations       t_avg[usec]    tps average\n 2             4863716          1.23           811253.55\n"))
	if len(d.PerftestLat) != 1 || !near(*d.PerftestLat[0].LatAvgUs, 1.23) || d.PerftestLat[0].LatTypicalUs != nil {
		t.Errorf("duration layout: %+v", d)
	}
	if _, ok := d.Summary[SumMinLatTypicalUs]; ok {
		t.Error("min typical latency invented for a run that has none")
	}
}

func TestOSUValidationAndMessageRate(t *testing.T) {
	r := ParseOSU([]byte("# OSU MPI Latency Test v7.5\n# Size       Avg Latency(us)        Validation\n1                       1.94              Pass\n2                       1.93              Fail\n"))
	if r.OK || !strings.Contains(r.Error, "validation failed") || len(r.OSU) != 2 {
		t.Errorf("validation: %+v", r)
	}
	m := Parse([]byte("# OSU MPI Multiple Bandwidth / Message Rate Test v7.2\n# [ pairs: 1 ] [ window size: 64 ]\n# Size                  MB/s        Messages/s\n1                       2.50        2500000.00\n4194304             12250.00           2920.62\n"))
	if m.Tool != "osu_mbw_mr" || m.Kind != KindOSUBW || len(m.OSU) != 2 || !near(*m.OSU[1].BWGbps, 98) {
		t.Errorf("mbw_mr: %+v", m)
	}
	bibw := Parse([]byte("# OSU One Sided MPI_Put Bi-directional Bandwidth Test v3.1.1\n# Size     Bi-Bandwidth (MB/s)\n4194304                1717.43\n"))
	if bibw.Tool != "osu_put_bibw" || bibw.Kind != KindOSUBW || len(bibw.OSU) != 1 || !near(*bibw.OSU[0].BWGbps, 13.73944) {
		t.Errorf("old one-sided bibw: %+v", bibw)
	}
	nb := Parse([]byte("# OSU MPI Non-blocking Allreduce Latency Test v7.2\n# Size     Overall(us)  Compute(us)  Pure Comm.(us)  Overlap(%)\n4  10.0 5.0 4.0 50.0\n"))
	if nb.Tool != "osu_iallreduce" {
		t.Errorf("non-blocking tool = %q", nb.Tool)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for name := range allVectorWants() {
		r := Parse(loadVector(t, name))
		r.Source = name
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var contract map[string]json.RawMessage
		if err := json.Unmarshal(data, &contract); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"tool", "ok", "error", "rows", "summary"} {
			if _, ok := contract[k]; !ok {
				t.Errorf("%s: JSON lacks %q: %s", name, k, data)
			}
		}
		var back Result
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(data) {
			t.Errorf("%s: round trip differs:\n%s\n%s", name, data, again)
		}
		if r.Rows() > 0 && back.Kind != r.Kind {
			t.Errorf("%s: kind %q after round trip, want %q", name, back.Kind, r.Kind)
		}
	}
}

func TestParseGarbage(t *testing.T) {
	for _, in := range []string{"", "\n\n", "hello world\n", "\x00\xff#bytes BW peak\n1 2 3\n"} {
		r := Parse([]byte(in))
		if r.OK {
			t.Errorf("%q parsed as ok: %+v", in, r)
		}
	}
}
