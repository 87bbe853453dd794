// Package bench parses saved outputs of RDMA and collective benchmarks
// (perftest ib_*_bw / ib_*_lat as text or --out_json, NVIDIA nccl-tests,
// the OSU micro-benchmarks, iperf3 --json) and training logs with a
// throughput per step (Horovod's synthetic benchmarks, tf_cnn_benchmarks,
// DeepSpeed, Megatron-LM) into one Result shape, and judges results against
// the link rate and against each other (pod vs bare metal, RDMA vs TCP);
// training runs form a scaling table (speed-up and efficiency against
// linear per scenario). NCCL_DEBUG=INFO lines, wherever they sit in an
// output, become the result's NCCLTransport (the network NCCL chose, its
// HCAs, GPUDirect RDMA per HCA and per channel, per host), judged by the
// nccl-network, nccl-gdr and nccl-hosts checks.
//
// Parsing never fails and never panics: whatever the input, Parse returns a
// Result. Failed runs (connection errors, NCCL failures, wrong results) have
// OK false and the first error line in Error. Truncated files keep their
// complete rows only: a last line without a terminating newline is treated
// as cut off and never becomes a row.
//
// Units are normalised: perftest bandwidth is always Gb/s (MiB/s x
// 0.008388608), OSU bandwidth is Gb/s (OSU's MB/s is 10^6 B/s: x 0.008),
// nccl-tests bandwidths stay in GB/s as printed, latencies are microseconds.
//
// The JSON form of Result ({"tool","ok","error","rows","summary"}, and
// "ncclTransport" when there were NCCL INFO lines) is a contract other
// tools rely on; see docs/bench.md.
package bench
