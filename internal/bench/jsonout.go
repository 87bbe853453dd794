package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Options change how ambiguous inputs are read.
type Options struct {
	// PerftestJSONGbits says perftest --out_json files were written by a
	// run with --report_gbits. perftest's JSON carries no unit: its
	// bandwidths are in the unit of the text report, MiB/s unless
	// --report_gbits. Default false: MiB/s.
	PerftestJSONGbits bool
}

// ParseWith is Parse with options.
func ParseWith(data []byte, o Options) Result { return checked(parseWith(data, o)) }

func parseWith(data []byte, o Options) Result {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		if r, ok := parseJSONOutput(t, o); ok {
			return r
		}
	} else if i := bytes.Index(data, []byte("\n{")); i >= 0 {
		// A pod log interleaves the tool's stderr with its stdout: lines
		// before the tool's JSON (a warning, a failed command's closing
		// error line that the runtime logged first) are not part of it.
		if r, ok := parseJSONOutput(bytes.TrimSpace(data[i+1:]), o); ok {
			return r
		}
	}
	return parseText(data)
}

// KindIperf3 is an iperf3 --json result.
const KindIperf3 Kind = "iperf3"

// iperf3 summary keys.
const (
	SumSentGbps     = "sent_gbps"
	SumReceivedGbps = "received_gbps"
	SumRetransmits  = "retransmits"
	ToolIperf3      = "iperf3"
	// ToolTCPProbe is Railyard's own TCP probe (railyard bench probe tcp),
	// whose output is iperf3-compatible JSON with a start.version naming
	// it: a TCP measurement, read by the iperf3 parser, never called iperf3.
	ToolTCPProbe = "railyard-tcp-probe"
)

// IperfRow is one iperf3 interval (the sum over streams), Gb/s.
type IperfRow struct {
	StartS      float64 `json:"start_s"`
	EndS        float64 `json:"end_s"`
	Gbps        float64 `json:"gbps"`
	Retransmits *int64  `json:"retransmits,omitempty"`
	// Omitted intervals (iperf3 --omit, TCP slow start) are not part of
	// the summary.
	Omitted bool `json:"omitted,omitempty"`
}

// perftest prints "sl: N" without quotes (raw QoS runs) and leaves a
// comma before "}" in --output=bandwidth runs: both are repaired before
// decoding.
var (
	jsonTrailingComma = regexp.MustCompile(`,(\s*})`)
	perftestBareSL    = regexp.MustCompile(`(?m)^(\s*)sl:`)
)

// parseJSONOutput reads perftest --out_json and iperf3 --json output. ok
// is false for JSON that is neither (such as bench parse --json output).
func parseJSONOutput(data []byte, o Options) (Result, bool) {
	fixed := perftestBareSL.ReplaceAll(jsonTrailingComma.ReplaceAll(data, []byte("$1")), []byte(`$1"sl":`))
	// The first JSON value is the output; text after it (the tool's
	// stderr in the same pod log, such as railyard's closing error line)
	// is not part of it.
	var top map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(fixed)).Decode(&top); err != nil {
		return Result{}, false
	}
	if _, ok := top["test_info"]; ok {
		return parsePerftestJSON(top, o), true
	}
	_, hasStart := top["start"]
	_, hasEnd := top["end"]
	if hasStart && hasEnd || top["intervals"] != nil {
		return parseIperf3(top), true
	}
	return Result{}, false
}

// ParsePerftestJSON parses a perftest --out_json file.
func ParsePerftestJSON(data []byte, o Options) Result {
	if r, ok := parseJSONOutput(bytes.TrimSpace(data), o); ok && r.Kind != KindIperf3 {
		return checked(r)
	}
	return Result{Tool: ToolPerftestNoName, Error: "not a perftest --out_json file", Summary: map[string]float64{}}
}

// ParseIperf3 parses iperf3 --json output.
func ParseIperf3(data []byte) Result {
	if r, ok := parseJSONOutput(bytes.TrimSpace(data), Options{}); ok && r.Kind == KindIperf3 {
		return checked(r)
	}
	return Result{Tool: ToolIperf3, Kind: KindIperf3, Error: "not iperf3 --json output", Summary: map[string]float64{}}
}

type perftestJSONInfo struct {
	Test      string `json:"test"`
	Device    string `json:"Device"`
	QPs       int    `json:"Number_of_qps"`
	Transport string `json:"Transport_type"`
	MTU       int    `json:"Mtu"`
	LinkType  string `json:"Link_type"`
}

type perftestJSONResults struct {
	MsgSize    *int64   `json:"MsgSize"`
	Iterations *int64   `json:"n_iterations"`
	BWPeak     *float64 `json:"BW_peak"`
	BWAverage  *float64 `json:"BW_average"`
	MsgRate    *float64 `json:"MsgRate"`
	BWAvgOnly  *float64 `json:"bw_avg"`
	TMin       *float64 `json:"t_min"`
	TMax       *float64 `json:"t_max"`
	TTypical   *float64 `json:"t_typical"`
	TAvg       *float64 `json:"t_avg"`
	P99        *float64 `json:"percentile_99"`
	P999       *float64 `json:"percentile_99.9"`
	AvgLatOnly *float64 `json:"avg_lat"`
}

func parsePerftestJSON(top map[string]json.RawMessage, o Options) Result {
	r := Result{Tool: ToolPerftestNoName, Summary: map[string]float64{}}
	var info perftestJSONInfo
	var res perftestJSONResults
	errInfo := json.Unmarshal(top["test_info"], &info)
	errRes := json.Unmarshal(top["results"], &res)
	r.Info = Info{Device: info.Device, QPs: info.QPs, Transport: info.Transport, MTU: info.MTU, LinkType: info.LinkType,
		Bidirectional: strings.Contains(info.Test, "Bidirectional")}
	if info.LinkType == "IB" || info.LinkType == "InfiniBand" {
		r.Info.LinkType = "IB"
	}
	// "RDMA_Write_Bidirectional_BW_Test" -> the title "RDMA_Write Bidirectional BW Test".
	title := strings.NewReplacer("_Bidirectional", " Bidirectional", "_Post_List", " Post List",
		"_BW_Test", " BW Test", "_Latency_Test", " Latency Test", "Atomic_", "Atomic ").Replace(info.Test)
	if m := matchPerftestTitle(title); m != nil {
		r.Tool = perftestToolName(m[1], m[3])
	}
	unit, unitName := MiBpsToGbps, "MiB/s"
	if o.PerftestJSONGbits {
		unit, unitName = 1, "Gb/s"
	}
	switch {
	case errInfo != nil || errRes != nil:
		r.Error = fmt.Sprintf("perftest JSON: %v", firstErr(errInfo, errRes))
	case res.BWAverage != nil && res.MsgSize != nil:
		r.Kind, r.Info.Unit = KindPerftestBW, unitName
		row := PerftestBWRow{Bytes: *res.MsgSize, BWAvgGbps: round(*res.BWAverage * unit)}
		if res.Iterations != nil {
			row.Iterations = *res.Iterations
		}
		if res.MsgRate != nil {
			row.MsgRateMpps = *res.MsgRate
		}
		if res.BWPeak != nil && !(*res.BWPeak == 0 && *res.BWAverage > 0) {
			row.BWPeakGbps = ptr(round(*res.BWPeak * unit))
		}
		r.PerftestBW = []PerftestBWRow{row}
	case res.BWAvgOnly != nil: // --output=bandwidth: no size, no row
		r.Kind, r.Info.Unit = KindPerftestBW, unitName
	case res.MsgSize != nil && (res.TTypical != nil || res.TAvg != nil):
		r.Kind = KindPerftestLat
		row := PerftestLatRow{Bytes: *res.MsgSize, LatMinUs: res.TMin, LatMaxUs: res.TMax, LatTypicalUs: res.TTypical,
			LatAvgUs: res.TAvg, LatP99Us: res.P99, LatP999Us: res.P999}
		if res.Iterations != nil {
			row.Iterations = *res.Iterations
		}
		r.PerftestLat = []PerftestLatRow{row}
	case res.AvgLatOnly != nil:
		r.Kind = KindPerftestLat
	default:
		r.Error = "perftest JSON without results"
	}
	if r.Kind == KindUnknown {
		r.Kind = kindOf(r.Tool, nil)
	}
	r.Summary = perftestSummary(r)
	if res.BWAvgOnly != nil && len(r.PerftestBW) == 0 {
		r.Summary[SumMaxBWAvgGbps] = round(*res.BWAvgOnly * unit)
	}
	if !finiteSummary(r.Summary) || !finiteRows(r) {
		r = Result{Tool: r.Tool, Kind: r.Kind, Info: r.Info, Summary: map[string]float64{}, Error: "perftest JSON: a value is not a finite number"}
	}
	r.OK = r.Error == ""
	return r
}

type iperfSum struct {
	Start       float64 `json:"start"`
	End         float64 `json:"end"`
	BitsPerSec  float64 `json:"bits_per_second"`
	Retransmits *int64  `json:"retransmits"`
	Omitted     bool    `json:"omitted"`
}

func parseIperf3(top map[string]json.RawMessage) Result {
	r := Result{Tool: ToolIperf3, Kind: KindIperf3, Summary: map[string]float64{}}
	var errMsg string
	if raw, ok := top["error"]; ok {
		if json.Unmarshal(raw, &errMsg) != nil || errMsg == "" {
			errMsg = "iperf3 reported an error"
		}
	}
	var intervals []struct {
		Sum iperfSum `json:"sum"`
	}
	if raw, ok := top["intervals"]; ok {
		_ = json.Unmarshal(raw, &intervals) // a malformed list is no rows
	}
	for _, iv := range intervals {
		s := iv.Sum
		if s.End < s.Start || !finiteAll(s.Start, s.End, s.BitsPerSec) {
			continue
		}
		r.Iperf = append(r.Iperf, IperfRow{StartS: s.Start, EndS: s.End, Gbps: round(s.BitsPerSec / 1e9),
			Retransmits: s.Retransmits, Omitted: s.Omitted})
	}
	var end struct {
		SumSent     *iperfSum `json:"sum_sent"`
		SumReceived *iperfSum `json:"sum_received"`
		Sum         *iperfSum `json:"sum"` // UDP
	}
	if raw, ok := top["end"]; ok {
		_ = json.Unmarshal(raw, &end)
	}
	if s := end.SumSent; s != nil && finiteAll(s.BitsPerSec) && s.BitsPerSec > 0 {
		r.Summary[SumSentGbps] = round(s.BitsPerSec / 1e9)
		if s.Retransmits != nil {
			r.Summary[SumRetransmits] = float64(*s.Retransmits)
		}
	}
	recv := end.SumReceived
	if recv == nil {
		recv = end.Sum
	}
	if recv != nil && finiteAll(recv.BitsPerSec) && recv.BitsPerSec > 0 {
		r.Summary[SumReceivedGbps] = round(recv.BitsPerSec / 1e9)
	}
	var start struct {
		Version   string `json:"version"`
		TestStart struct {
			Reverse int `json:"reverse"`
		} `json:"test_start"`
	}
	if raw, ok := top["start"]; ok {
		_ = json.Unmarshal(raw, &start)
	}
	if strings.HasPrefix(start.Version, ToolTCPProbe+"/") {
		r.Tool = ToolTCPProbe
		if errMsg == "iperf3 reported an error" {
			errMsg = "the tcp probe reported an error"
		}
	}
	r.Error = errMsg
	if r.Error == "" && len(r.Summary) == 0 {
		r.Error = "no iperf3 summary (the run did not finish)"
	}
	r.OK = r.Error == ""
	return r
}

func finiteAll(vs ...float64) bool {
	for _, v := range vs {
		if v != v || v > 1e300 || v < -1e300 {
			return false
		}
	}
	return true
}

func finiteSummary(s map[string]float64) bool {
	for _, v := range s {
		if !finiteAll(v) {
			return false
		}
	}
	return true
}

func finiteRows(r Result) bool {
	for _, row := range r.PerftestBW {
		if !finiteAll(row.BWAvgGbps, row.MsgRateMpps) || (row.BWPeakGbps != nil && !finiteAll(*row.BWPeakGbps)) {
			return false
		}
	}
	return true
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
