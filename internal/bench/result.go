package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Kind says which row type a Result holds.
type Kind string

// Kinds of results.
const (
	KindUnknown     Kind = ""
	KindPerftestBW  Kind = "perftest-bw"
	KindPerftestLat Kind = "perftest-lat"
	KindNCCL        Kind = "nccl-tests"
	KindOSUBW       Kind = "osu-bw"
	KindOSULat      Kind = "osu-lat"
	KindTraining    Kind = "training"
)

// Summary keys (the --json contract).
const (
	SumMaxBWAvgGbps     = "max_bw_avg_gbps"
	SumMinLatTypicalUs  = "min_lat_typical_us"
	SumAvgBusBWGBps     = "avg_busbw_GBps"
	SumMaxBusBWGBps     = "max_busbw_GBps"
	SumOutOfBounds      = "out_of_bounds"
	SumMaxBWGbps        = "max_bw_gbps"
	SumMinLatAvgUs      = "min_lat_avg_us"
	ToolUnknown         = "unknown"
	ToolNCCLTestsNoName = "nccl-tests"
	ToolPerftestNoName  = "perftest"
	ToolOSUNoName       = "osu"
)

// Result is one parsed benchmark output. Exactly one of the row slices is
// used, chosen by Kind.
type Result struct {
	// Source is where the output came from (a file name), when known.
	Source string
	Tool   string
	Kind   Kind
	OK     bool
	Error  string

	PerftestBW  []PerftestBWRow
	PerftestLat []PerftestLatRow
	NCCL        []NCCLRow
	OSU         []OSURow
	Training    []TrainingRow
	Iperf       []IperfRow

	Summary map[string]float64
	Info    Info
	// NCCLTransport is what the output's NCCL_DEBUG=INFO lines say about
	// the network, whatever else the output is (nccl-tests, a training
	// log); nil when it has none.
	NCCLTransport *NCCLTransport
}

// Info holds facts about the run read from the output's header.
type Info struct {
	Device        string `json:"device,omitempty"`
	LinkType      string `json:"link_type,omitempty"` // "Ethernet" (RoCE) | "IB"
	Transport     string `json:"transport,omitempty"` // "IB" | "IW"
	MTU           int    `json:"mtu,omitempty"`
	QPs           int    `json:"qps,omitempty"`
	Bidirectional bool   `json:"bidirectional,omitempty"`
	Server        bool   `json:"server,omitempty"` // perftest server side
	Ranks         int    `json:"ranks,omitempty"`  // nccl-tests: highest rank seen + 1
	Nodes         int    `json:"nodes,omitempty"`  // nccl-tests: distinct hosts seen
	GPUs          int    `json:"gpus,omitempty"`   // training: GPUs the log states
	CPUs          int    `json:"cpus,omitempty"`   // training: CPU workers the log states (Horovod on CPUs)
	Model         string `json:"model,omitempty"`  // training: the model trained
	Unit          string `json:"unit,omitempty"`   // training: img/s or samples/s
}

// PerftestBWRow is one row of an ib_*_bw table, bandwidth in Gb/s.
// BWPeakGbps is nil when perftest did not measure the peak (it prints 0.00).
type PerftestBWRow struct {
	Bytes       int64    `json:"bytes"`
	Iterations  int64    `json:"iterations"`
	BWPeakGbps  *float64 `json:"bw_peak_gbps"`
	BWAvgGbps   float64  `json:"bw_avg_gbps"`
	MsgRateMpps float64  `json:"msg_rate_mpps"`
}

// PerftestLatRow is one row of an ib_*_lat table in microseconds. Columns an
// older perftest or a duration (-D) run does not print are nil.
type PerftestLatRow struct {
	Bytes        int64    `json:"bytes"`
	Iterations   int64    `json:"iterations"`
	LatMinUs     *float64 `json:"lat_min_us"`
	LatMaxUs     *float64 `json:"lat_max_us"`
	LatTypicalUs *float64 `json:"lat_typical_us"`
	LatAvgUs     *float64 `json:"lat_avg_us"`
	LatP99Us     *float64 `json:"lat_p99_us"`
	LatP999Us    *float64 `json:"lat_p999_us"`
}

// NCCLRow is one row of an nccl-tests table; bandwidths in GB/s as printed.
// The wrong counts are nil when not checked (N/A) or when the output is from
// the era that printed a max error instead of a count.
type NCCLRow struct {
	Bytes        int64   `json:"bytes"`
	Count        int64   `json:"count"`
	Type         string  `json:"type"`
	Redop        string  `json:"redop"`
	OOPTimeUs    float64 `json:"oop_time_us"`
	OOPAlgBWGBps float64 `json:"oop_algbw_GBps"`
	OOPBusBWGBps float64 `json:"oop_busbw_GBps"`
	OOPWrong     *int64  `json:"oop_wrong"`
	IPTimeUs     float64 `json:"ip_time_us"`
	IPAlgBWGBps  float64 `json:"ip_algbw_GBps"`
	IPBusBWGBps  float64 `json:"ip_busbw_GBps"`
	IPWrong      *int64  `json:"ip_wrong"`
}

// BusBW is the better of the out-of-place and in-place bus bandwidths.
func (r NCCLRow) BusBW() float64 { return max(r.OOPBusBWGBps, r.IPBusBWGBps) }

// OSURow is one row of an OSU table: bandwidth in Gb/s or latency in us.
type OSURow struct {
	Bytes    int64    `json:"bytes"`
	BWGbps   *float64 `json:"bw_gbps,omitempty"`
	LatAvgUs *float64 `json:"lat_avg_us,omitempty"`
	LatMinUs *float64 `json:"lat_min_us,omitempty"`
	LatMaxUs *float64 `json:"lat_max_us,omitempty"`
}

// Rows returns the number of rows of the result's kind.
func (r Result) Rows() int {
	return len(r.PerftestBW) + len(r.PerftestLat) + len(r.NCCL) + len(r.OSU) + len(r.Training) + len(r.Iperf)
}

type resultJSON struct {
	Source  string             `json:"source,omitempty"`
	Tool    string             `json:"tool"`
	OK      bool               `json:"ok"`
	Error   string             `json:"error"`
	Rows    json.RawMessage    `json:"rows"`
	Summary map[string]float64 `json:"summary"`
	Info    *Info              `json:"info,omitempty"`
	// NCCLTransport is omitted when the output had no NCCL INFO line.
	NCCLTransport *NCCLTransport `json:"ncclTransport,omitempty"`
}

// MarshalJSON writes the contract form {"tool","ok","error","rows","summary"}
// (plus "source", "info" and "ncclTransport" when set).
func (r Result) MarshalJSON() ([]byte, error) {
	raw := []byte("[]")
	if k, ok := kindRowOf(r.Kind); ok {
		var err error
		if raw, err = k.rows(&r).marshal(); err != nil {
			return nil, fmt.Errorf("marshal rows: %w", err)
		}
	}
	out := resultJSON{Source: r.Source, Tool: r.Tool, OK: r.OK, Error: r.Error, Rows: raw, Summary: r.Summary, NCCLTransport: r.NCCLTransport}
	if out.Summary == nil {
		out.Summary = map[string]float64{}
	}
	if r.Info != (Info{}) {
		info := r.Info
		out.Info = &info
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the contract form back. The row type is chosen from the
// row fields present, or from the tool name when there are no rows.
func (r *Result) UnmarshalJSON(data []byte) error {
	var in resultJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*r = Result{Source: in.Source, Tool: in.Tool, OK: in.OK, Error: in.Error, Summary: in.Summary, NCCLTransport: in.NCCLTransport}
	if in.Info != nil {
		r.Info = *in.Info
	}
	var probe []map[string]json.RawMessage
	if len(in.Rows) > 0 && !bytes.Equal(in.Rows, []byte("null")) {
		if err := json.Unmarshal(in.Rows, &probe); err != nil {
			return fmt.Errorf("rows: %w", err)
		}
	}
	r.Kind = kindOf(in.Tool, probe)
	if len(probe) == 0 {
		return nil
	}
	k, ok := kindRowOf(r.Kind)
	if !ok {
		return fmt.Errorf("rows of tool %q: unknown row fields", in.Tool)
	}
	if err := k.rows(r).unmarshal(in.Rows); err != nil {
		return fmt.Errorf("rows: %w", err)
	}
	*r = checked(*r) // an edited document gets no "-18.7% of line rate" either
	return nil
}

// kindOf picks a kind by the first row's fields, or by the tool name
// when there are no rows (the kinds table's order decides).
func kindOf(tool string, rows []map[string]json.RawMessage) Kind {
	for _, k := range kinds {
		if len(rows) > 0 {
			if _, ok := rows[0][k.rowField]; ok {
				return k.kind
			}
		} else if k.tool(tool) {
			return k.kind
		}
	}
	return KindUnknown
}

var trainingTools = map[string]bool{ToolHorovod: true, ToolTFCNN: true, ToolDeepSpeed: true, ToolMegatron: true, ToolTrainNoName: true}
