package benchreport

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/railyard-io/railyard/internal/bench"
)

// paperInput is the vGPU + PVRDMA paper's Horovod ResNet-50 runs (one vGPU
// per VM, 1 to 4 VMs) as training results, with the bare-metal scenario
// left out (the paper's table has TCP and PVRDMA).
func paperInput() Input {
	tcp := []float64{340, 364, 437, 550}
	rdma := []float64{340, 533, 781, 1021}
	var rs []bench.Labelled
	for i := range tcp {
		for _, s := range []struct {
			name string
			v    float64
		}{{"tcp", tcp[i]}, {"rdma", rdma[i]}} {
			rs = append(rs, bench.Labelled{Scenario: s.name, Nodes: i + 1, Result: bench.Result{
				Tool: bench.ToolHorovod, Kind: bench.KindTraining, OK: true, Source: "paper",
				Info:    bench.Info{GPUs: i + 1, Unit: "img/s"},
				Summary: map[string]float64{bench.SumTotalThroughput: s.v},
			}})
		}
	}
	in := Input{Results: rs, Thresholds: bench.DefaultThresholds()}
	in.Verdicts = bench.Judge(bench.JudgeInput{Results: rs})
	return in
}

func TestPrintScalingPaperTable(t *testing.T) {
	var buf bytes.Buffer
	if err := PrintScaling(&buf, Scaling(paperInput())); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 9 {
		t.Fatalf("table:\n%s", buf.String())
	}
	for i, want := range []string{
		"tcp 1 1 340 img/s 1.00x 100.0%",
		"tcp 4 4 550 img/s 1.62x 40.4%",
		"rdma 2 2 533 img/s 1.57x 78.4%",
		"rdma 4 4 1021 img/s 3.00x 75.1%",
	} {
		row := []int{1, 4, 6, 8}[i]
		if got := strings.Join(strings.Fields(lines[row]), " "); got != want {
			t.Errorf("row %d = %q, want %q", row, got, want)
		}
	}
}

func TestWriteScalingReport(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(dir, paperInput()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scaling-throughput.png", "scaling-throughput.svg", "scaling-efficiency.png", "scaling-efficiency.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".png") {
			if _, err := png.Decode(bytes.NewReader(data)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "scaling-throughput.svg"))
	for _, s := range []string{"Training throughput vs GPUs", "rdma (linear)", "Throughput (img/s)"} {
		if !strings.Contains(string(svg), s) {
			t.Errorf("throughput chart lacks %q", s)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	for _, s := range []string{"<h2>Training scaling</h2>", `<td class="num">1021 img/s</td><td class="num">3.00x</td><td class="num">75.1%</td>`,
		`<td class="num">550 img/s</td><td class="num">1.62x</td>`, "training at 4 nodes, 4 GPUs: RDMA 1021 img/s vs TCP 550 img/s: 1.86x"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	var js struct {
		Scaling []bench.ScalingRow `json:"scaling"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(raw, &js); err != nil || len(js.Scaling) != 8 || js.Scaling[7].Throughput != 1021 {
		t.Errorf("report.json scaling: %v %+v", err, js.Scaling)
	}
	if os.Getenv("RAILYARD_REPORT_DIR") != "" {
		if _, err := Write(filepath.Join(os.Getenv("RAILYARD_REPORT_DIR"), "scaling"), paperInput()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScalingChartsAxes(t *testing.T) {
	rows := Scaling(paperInput())
	c, ok := ScalingThroughputChart(rows)
	// tcp, tcp (linear), rdma, rdma (linear); linear from 340 at 1 GPU.
	if !ok || len(c.Series) != 4 || c.Series[1].Name != "tcp (linear)" || c.Series[1].Y[3] != 1360 || c.X.Label != "GPUs" {
		t.Errorf("throughput chart = %+v", c)
	}
	e, _ := ScalingEfficiencyChart(rows, 0.9)
	if len(e.Series) != 2 || len(e.Refs) != 2 || e.Refs[1].Y != 90 || e.Series[1].Y[0] != 100 {
		t.Errorf("efficiency chart = %+v", e)
	}
	// 1 to 16 nodes without GPU counts: a log2 node axis.
	var wide []bench.ScalingRow
	for _, n := range []int{1, 2, 4, 8, 16} {
		wide = append(wide, bench.ScalingRow{ScalingPoint: bench.ScalingPoint{Scenario: "ib", Nodes: n, Throughput: float64(n)}, By: "nodes"})
	}
	w, _ := ScalingThroughputChart(wide)
	if w.X.Label != "Nodes" || w.X.Scale == 0 {
		t.Errorf("wide axis = %+v", w.X)
	}
}

func TestNCCLLatencyChart(t *testing.T) {
	c, ok := NCCLLatencyChart([]bench.Labelled{{Scenario: "rdma", Result: vector(t, ncclIB)}, {Scenario: "tcp", Result: vector(t, ncclTCP)}})
	if !ok || len(c.Series) != 2 || len(c.Series[0].X) != 16 {
		t.Fatalf("chart = %+v", c)
	}
	r := vector(t, ncclIB)
	if c.Series[0].Y[0] != r.NCCL[0].OOPTimeUs || c.Series[0].X[0] != float64(r.NCCL[0].Bytes) {
		t.Errorf("first point = %v,%v", c.Series[0].X[0], c.Series[0].Y[0])
	}
}
