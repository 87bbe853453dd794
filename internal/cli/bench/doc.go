// Package bench is the `railyard bench` command: parse (saved perftest,
// nccl-tests and OSU outputs to the JSON contract), report (verdicts and an
// HTML report with charts), plan (Kubernetes manifests that run the
// benchmarks), run (a plan's pod pairs on a cluster, through the same
// judging and report writing as report) and probe (Railyard's own TCP
// probe). The logic lives in internal/bench, internal/benchreport,
// internal/benchplan, internal/benchrun and internal/benchprobe; this
// package only maps flags onto them (and draws bench run's progress).
package bench
