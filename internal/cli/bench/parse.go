package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/bench"
	"github.com/railyard-io/railyard/internal/cli/iostreams"
	"github.com/railyard-io/railyard/internal/inputfile"
)

// maxInput bounds how much of one file is read (saved outputs are small;
// this keeps a wrong path such as a disk image from exhausting memory).
const maxInput = 256 << 20

func newParseCommand(s iostreams.Streams) *cobra.Command {
	var asJSON bool
	var suite, profile string
	var opts bench.Options
	cmd := &cobra.Command{
		Use:   "parse FILE...",
		Short: "Parse saved perftest, nccl-tests or OSU outputs",
		Long: `parse reads saved benchmark outputs ("-" for stdin) and prints what they
contain. The suite is detected from the output unless --suite says it.

With --json it prints, per file, one JSON object:
  {"source", "tool", "ok", "error", "rows": [...], "summary": {...}, "info": {...},
   "ncclTransport": {...}}
(see docs/bench.md for the row fields). It exits non-zero when any output is
a failed run (ok false).

NCCL_DEBUG=INFO lines anywhere in an output (nccl-tests, a training log) are
read too: the network NCCL chose, its HCAs, GPUDirect RDMA per HCA and on
each channel, per host; they are judged (nccl-network, nccl-gdr,
nccl-hosts) and a failed check makes the exit status non-zero. A log of
any other job is read for those lines alone with --suite nccl-debug.
--profile names the fabric: on infiniband, roce-lossless and roce-lossy a
fallback to TCP sockets fails, without it it is a warning.`,
		Example: `  railyard bench parse ib_write_bw.txt
  railyard bench parse --json all_reduce_perf.log osu_bw.txt > results.json
  kubectl logs railyard-bench-perftest-client-rdma | railyard bench parse -
  kubectl logs job/train | railyard bench parse --suite nccl-debug --profile roce-lossless -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			parse, err := parserFor(suite, opts)
			if err != nil {
				return err
			}
			if profile != "" {
				if _, err := bench.ProfileNamed(profile); err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
			}
			failed, failedChecks := 0, 0
			var errs []error
			for _, path := range args {
				if err := cmd.Context().Err(); err != nil {
					return err
				}
				data, err := readInput(cmd.Context(), path, s.In)
				if err != nil {
					return err
				}
				r := parse(data)
				r.Source = path
				if !r.OK {
					failed++
				}
				var verdicts []bench.Verdict
				if r.NCCLTransport != nil {
					verdicts = bench.NCCLTransportVerdicts(bench.JudgeInput{Profile: profile}, bench.Labelled{Result: r})
				}
				for _, v := range verdicts {
					if v.Status == bench.StatusFail {
						failedChecks++
						if asJSON { // the text form prints them with the result
							errs = append(errs, fmt.Errorf("%s: %s: %s", path, v.Check, v.Reason))
						}
					}
				}
				if asJSON {
					out, err := json.MarshalIndent(r, "", "  ")
					if err != nil {
						// One file's problem never hides the others'
						// results (parsers keep values JSON can carry).
						errs = append(errs, fmt.Errorf("%s: %w", path, err))
						continue
					}
					fmt.Fprintf(s.Out, "%s\n", out)
					continue
				}
				if err := printResult(s.Out, r); err != nil {
					return err
				}
				if r.NCCLTransport != nil {
					if err := printNCCLTransport(s.Out, r.NCCLTransport, verdicts); err != nil {
						return err
					}
				}
			}
			if failed > 0 {
				errs = append(errs, fmt.Errorf("%d of %d outputs are failed runs", failed, len(args)))
			}
			if failedChecks > 0 {
				errs = append(errs, fmt.Errorf("%d NCCL check(s) failed", failedChecks))
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per file")
	cmd.Flags().StringVar(&suite, "suite", "auto", "output format: auto, perftest, nccl, osu, training, iperf3 or nccl-debug (NCCL INFO lines alone)")
	cmd.Flags().StringVar(&profile, "profile", "", "the fabric NCCL INFO lines are judged by: "+strings.Join(bench.ProfileNames(), " | ")+
		" (infiniband and roce-* fail a fallback to TCP sockets)")
	cmd.Flags().BoolVar(&opts.PerftestJSONGbits, "perftest-json-gbits", false, "perftest --out_json files come from runs with --report_gbits (their JSON has no unit; default MiB/s)")
	return cmd
}

func parserFor(suite string, o bench.Options) (func([]byte) bench.Result, error) {
	switch suite {
	case "auto", "":
		return func(data []byte) bench.Result { return bench.ParseWith(data, o) }, nil
	case "perftest":
		return func(data []byte) bench.Result {
			if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
				return bench.ParsePerftestJSON(data, o)
			}
			return bench.ParsePerftest(data)
		}, nil
	case "iperf3":
		return bench.ParseIperf3, nil
	case "nccl", "nccl-tests":
		return bench.ParseNCCL, nil
	case "osu":
		return bench.ParseOSU, nil
	case "training":
		return bench.ParseTraining, nil
	case "nccl-debug":
		return bench.ParseNCCLDebug, nil
	}
	return nil, fmt.Errorf("--suite %q: want auto, perftest, nccl, osu, training, iperf3 or nccl-debug", suite)
}

// readInput reads a regular file (internal/inputfile; "-": stdin) of at
// most maxInput bytes, in chunks, stopping when ctx is done.
func readInput(ctx context.Context, path string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := inputfile.Open(path) // a regular file: a FIFO or a device fails at once
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	r = io.LimitReader(r, maxInput+1)
	var data []byte
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		n, err := r.Read(buf)
		data = append(data, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("read %s: larger than %d MiB", path, maxInput>>20)
	}
	return data, nil
}

// loadResult reads a raw tool output (perftest --out_json and iperf3
// --json included) or the JSON printed by `bench parse --json` (its first
// object, recognised by its "tool" key).
func loadResult(ctx context.Context, path string, stdin io.Reader, o bench.Options) (bench.Result, error) {
	data, err := readInput(ctx, path, stdin)
	if err != nil {
		return bench.Result{}, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' && isContractJSON(t) {
		var r bench.Result
		if err := json.NewDecoder(bytes.NewReader(t)).Decode(&r); err != nil {
			return bench.Result{}, fmt.Errorf("%s: not bench parse --json output: %w", path, err)
		}
		if r.Source == "" {
			r.Source = path
		}
		return r, nil
	}
	r := bench.ParseWith(data, o)
	r.Source = path
	return r, nil
}

// isContractJSON reports whether the first JSON object has the "tool" key
// of bench parse --json output; anything else is a tool's own JSON.
func isContractJSON(data []byte) bool {
	var head map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&head); err != nil {
		return true // let the contract decoder say what is wrong
	}
	_, ok := head["tool"]
	return ok
}

func printResult(w io.Writer, r bench.Result) error {
	status := "ok"
	if !r.OK {
		status = "FAILED: " + r.Error
	}
	fmt.Fprintf(w, "%s: %s, %d rows, %s\n", r.Source, r.Tool, r.Rows(), status)
	if len(r.Summary) > 0 {
		keys := make([]string, 0, len(r.Summary))
		for k := range r.Summary {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%g", k, r.Summary[k]))
		}
		fmt.Fprintf(w, "  summary: %s\n", strings.Join(parts, " "))
	}
	if r.Rows() == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	columns, cells := r.Table()
	if len(columns) > 0 {
		fmt.Fprintf(tw, "  %s\t\n", strings.Join(columns, "\t"))
	}
	for _, row := range cells {
		fmt.Fprintf(tw, "  %s\t\n", strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}
