package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

func addVectorSeeds(f *testing.F) {
	for name := range allVectorWants() {
		f.Add(loadVector(f, name))
	}
	f.Add([]byte("#bytes BW peak[Gb/sec]\n 1 2 3 4 5"))
	f.Add([]byte("# Size Bandwidth (MB/s)\n1 1e309\n"))
	// Values no tool prints, a sweep cut off, two suites in one log.
	f.Add([]byte(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 5000 -18.70 -18.70 0.035\n---\n"))
	f.Add([]byte(`{"test_info": {"test": "RDMA_Write_BW_Test"}, "results": {"MsgSize": -65536, "BW_peak": 1, "BW_average": 1}}`))
	f.Add([]byte(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 8192 5000 90 90 1\n 16384 5000 91 91 1\n"))
	f.Add([]byte(" #bytes BW peak[Gb/sec] BW average[Gb/sec]\n 65536 5000 90 90 1\n---\n#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"))
}

// checkInvariants holds for any input: no panic, OK iff no error, the JSON
// contract marshals and reads back.
func checkInvariants(t *testing.T, r Result) {
	if r.OK != (r.Error == "") {
		t.Fatalf("ok=%v with error %q", r.OK, r.Error)
	}
	if r.Tool == "" {
		t.Fatal("empty tool")
	}
	if err := checkValues(r); r.OK && err != nil {
		t.Fatalf("ok with %v", err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		// +Inf/NaN cannot appear: parseFloat rejects NaN and ParseFloat
		// overflows to an error for 1e309.
		t.Fatalf("marshal: %v", err)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
}

func FuzzParse(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkInvariants(t, Parse(data)) })
}

func FuzzParsePerftest(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkInvariants(t, ParsePerftest(data)) })
}

func FuzzParseNCCL(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkInvariants(t, ParseNCCL(data)) })
}

func FuzzParseOSU(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkInvariants(t, ParseOSU(data)) })
}

// largeNCCL builds an nccl-tests output of n rows as 2 nodes x 8 GPUs with
// the launcher prefix "[1,0]<stdout>:" on every line.
func largeNCCL(n int) []byte {
	var b strings.Builder
	b.WriteString("[1,0]<stdout>:# Collective test starting: all_reduce_perf\n")
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&b, "[1,0]<stdout>:#  Rank %2d Group  0 Pid %6d on   worker-%d device  %d [0000:18:00] NVIDIA H100 80GB HBM3\n", i, 1000+i, i/8, i%8)
	}
	b.WriteString("[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n")
	for i := 0; i < n; i++ {
		size := int64(8) << (i % 31)
		fmt.Fprintf(&b, "[1,0]<stdout>:%12d  %12d     float     sum      -1  %7.2f  %6.2f  %6.2f       0  %7.2f  %6.2f  %6.2f       0\n",
			size, size/4, 60.1+float64(i%97), 186.28, 349.28, 59.8, 186.7, 350.06)
	}
	b.WriteString("[1,0]<stdout>:# Out of bounds values : 0 OK\n[1,0]<stdout>:# Avg bus bandwidth    : 190.338 \n")
	return []byte(b.String())
}

func largePerftest(n int) []byte {
	var b strings.Builder
	b.WriteString("                    RDMA_Write BW Test\n Device         : mlx5_0\n Mtu             : 4096[B]\n Link type       : Ethernet\n")
	b.WriteString(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " %-10d %-10d       %6.2f             %6.2f               %8.6f\n", 2<<(i%23), 5000, 92.40, 92.39, 0.011015)
	}
	b.WriteString("---------------------------------------------------------------------------------------\n")
	return []byte(b.String())
}

// cpuTime is the process's user+system CPU time. The benchmarks report it
// per operation next to wall time because this machine's 2 cores are shared
// with other builds, which inflates wall time but not CPU time much.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchParse(b *testing.B, data []byte, rows func(Result) int, want int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	n := 0
	for b.Loop() {
		if r := Parse(data); rows(r) != want || !r.OK {
			b.Fatalf("rows %d ok %v %q", rows(r), r.OK, r.Error)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n)/float64(want), "cpu-ns/row")
}

func BenchmarkParseNCCLLarge(b *testing.B) {
	benchParse(b, largeNCCL(100000), func(r Result) int { return len(r.NCCL) }, 100000)
}

func BenchmarkParsePerftestLarge(b *testing.B) {
	benchParse(b, largePerftest(100000), func(r Result) int { return len(r.PerftestBW) }, 100000)
}
