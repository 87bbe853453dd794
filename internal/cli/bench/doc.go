// Package bench is the `railyard bench` command: parse (saved perftest,
// nccl-tests and OSU outputs to the JSON contract), report (verdicts and an
// HTML report with charts) and plan (Kubernetes manifests that run the
// benchmarks). The logic lives in internal/bench, internal/benchreport and
// internal/benchplan; this package only maps flags onto them.
package bench
