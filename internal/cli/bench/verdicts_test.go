package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFile writes text into a file of a temporary directory.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// perftestGbits is ib_write_bw --report_gbits output with one 64 KiB row.
func perftestGbits(gbps string) string {
	return `---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : mlx5_0
 Link type       : IB
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             ` + gbps + `              ` + gbps + `              0.160000
---------------------------------------------------------------------------------------
`
}

// The published GPUDirect pair (10.5 GB/s under the GPU's switch, 3.5 GB/s
// across the host bridge, on 100 Gb/s NICs) through bench report with the
// default marks: one ratio verdict with the classes named, the near run's
// 84% judged by the GPUDirect mark (80%), and exit 0, as its author
// concludes; --pass-gpudirect-line-rate 0.9 fails it.
func TestReportGPUDirectPair(t *testing.T) {
	near, far := writeFile(t, "near.txt", perftestGbits("84.00")), writeFile(t, "far.txt", perftestGbits("28.00"))
	out, _, err := run(t, "", "report", "--result", "gpudirect-near="+near, "--result", "gpudirect-far="+far,
		"--line-rate-gbps", "100", "--gpudirect-classes", "PIX,PHB", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"PIX 10.5 GB/s vs PHB 3.5 GB/s: 3.0x; NCCL would use GPUDirect only on the near NIC",
		"84.0% of 100 Gb/s line rate; pass at 80% (GPU memory through the GPU's rail NIC: the GPUDirect mark)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if out, _, err := run(t, "", "report", "--result", "gpudirect-near="+near, "--result", "gpudirect-far="+far,
		"--line-rate-gbps", "100", "--pass-gpudirect-line-rate", "0.9", "--out", t.TempDir()); err == nil {
		t.Errorf("--pass-gpudirect-line-rate 0.9 passed 84%%:\n%s", out)
	}
	if _, _, err := run(t, "", "report", "--result", "gpudirect-near="+near, "--gpudirect-classes", "PIX", "--out", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "want NEAR,FAR") {
		t.Errorf("one class: %v", err)
	}
}

func TestPlanGPUDirectFarClass(t *testing.T) {
	_, errOut, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--tests", "gpudirect", "--variant", "rdma",
		"--machine", "roce-8gpu-4nic", "--far-class", "PHB")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "far mlx5_1 0000:") || !strings.Contains(errOut, "(PHB)") {
		t.Errorf("stderr: %s", errOut)
	}
	for _, bad := range []string{"PIX", "XYZ"} {
		if _, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--tests", "gpudirect", "--variant", "rdma",
			"--machine", "roce-8gpu-4nic", "--far-class", bad); err == nil || !strings.Contains(err.Error(), "want PHB, NODE or SYS") {
			t.Errorf("--far-class %s: %v", bad, err)
		}
	}
}

// The profile: from the topology's link layer, from the results', or
// --profile; a threshold flag the user sets overrides the profile's mark;
// the report says which profile judged.
func TestReportProfile(t *testing.T) {
	roce := vectorFile(t, roceBW) // 92.44 of 100 Gb/s, RoCE, MTU 1024
	for _, tc := range []struct {
		name   string
		args   []string
		want   string
		failed bool
	}{
		{"from the topology", []string{"--machine", "dgx-h100"}, "profile: infiniband (from the topology's link layer, InfiniBand", true},
		{"from the results", []string{"--line-rate-gbps", "100"}, "profile: roce-lossless (from the results' link layer, Ethernet", false},
		{"named", []string{"--line-rate-gbps", "100", "--profile", "virtual"}, "profile: virtual (--profile)", false},
		{"flag over profile", []string{"--line-rate-gbps", "100", "--profile", "virtual", "--pass-line-rate", "0.95"}, "pass at 95%", true},
		{"profile mark", []string{"--line-rate-gbps", "100", "--profile", "virtual"}, "pass at 70%", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"report", "--result", "rdma=" + roce, "--out", t.TempDir()}, tc.args...)
			out, _, err := run(t, "", args...)
			if (err != nil) != tc.failed || !strings.Contains(out, tc.want) {
				t.Errorf("err = %v (want failed %v), output lacks %q:\n%s", err, tc.failed, tc.want, out)
			}
		})
	}
	if _, _, err := run(t, "", "report", "--result", "rdma="+roce, "--profile", "lossy"); err == nil || !strings.Contains(err.Error(), "roce-lossless, roce-lossy") {
		t.Errorf("--profile lossy: %v", err)
	}
}

// A single training run: an info line without --baseline, a verdict with
// one; a failed or non-training baseline is refused.
func TestReportTrainingBaseline(t *testing.T) {
	log := func(per string) string {
		return "Model: resnet50\nNumber of GPUs: 8\nImg/sec per GPU: " + per + " +-3.0\nTotal img/sec on 8 GPU(s): 1960.0 +-24.0\n"
	}
	run1, base := writeFile(t, "run.log", log("200.0")), writeFile(t, "base.log", log("250.0"))
	out, _, err := run(t, "", "report", "--result", "rdma="+run1, "--out", t.TempDir())
	if err != nil || !strings.Contains(out, "give --baseline a previous run") {
		t.Errorf("no baseline: %v\n%s", err, out)
	}
	out, _, err = run(t, "", "report", "--result", "rdma="+run1, "--baseline", base, "--out", t.TempDir())
	if err == nil || !strings.Contains(out, "vs the baseline's 250 img/s") || !strings.Contains(out, "80.0%; pass at 95%") {
		t.Errorf("slower than the baseline: %v\n%s", err, out)
	}
	if _, _, err := run(t, "", "report", "--result", "rdma="+run1, "--baseline", writeFile(t, "bw.txt", perftestGbits("90.00")), "--out", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "want a successful training run") {
		t.Errorf("perftest baseline: %v", err)
	}
}

func TestPlanPodResourcesBareMetalRDMACM(t *testing.T) {
	out, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--variant", "rdma", "--tests", "perftest", "--bare-metal",
		"--pod-resources", "hugepages-1Gi=4Gi,cpu=6,memory=8Gi")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hugepages-1Gi: 4Gi", "hostNetwork: true", "railyard.io/bench-scenario: bare-metal", "medium: HugePages"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q", want)
		}
	}
	if _, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--pod-resources", "gpu=1"); err == nil || !strings.Contains(err.Error(), "--pod-resources") {
		t.Errorf("bad --pod-resources: %v", err)
	}
	if _, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--variant", "rdma", "--tests", "perftest", "--perftest-args", "-R -a"); err == nil ||
		!strings.Contains(err.Error(), "give --server-address") {
		t.Errorf("-R without --server-address: %v", err)
	}
}

// bench run takes the GPUDirect pair's classes from the plan's labels, so
// its gpudirect-alignment verdict names them without --gpudirect-classes.
func TestPlanGPUDirectClassesFromPlan(t *testing.T) {
	plan, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--tests", "gpudirect", "--variant", "rdma",
		"--machine", "roce-8gpu-4nic", "--far-class", "PHB")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"PIX", "PHB"}, planGPUDirectClasses([]byte(plan))); d != "" {
		t.Errorf("classes (-want +got):\n%s", d)
	}
	perftestOnly, _, err := run(t, "", "plan", "--image", "i", "--nodes", "a,b", "--tests", "perftest")
	if err != nil {
		t.Fatal(err)
	}
	if got := planGPUDirectClasses([]byte(perftestOnly)); got != nil {
		t.Errorf("a plan without the pair: %v", got)
	}
}
