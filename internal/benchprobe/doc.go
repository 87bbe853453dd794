// Package benchprobe is Railyard's own TCP bandwidth probe: a server that
// accepts one test and a client that sends over K parallel TCP streams for
// D seconds, then prints the result as iperf3-compatible JSON (a subset of
// iperf3 --json: start, intervals[].sum, end.sum_sent, end.sum_received,
// error) whose start.version names the probe ("railyard-tcp-probe"), so
// internal/bench reads it with its iperf3 parser and labels it with the
// probe's name, never as iperf3 and never as RDMA.
//
// The probe measures TCP through the kernel's socket stack on whatever
// interface the route to the server takes. It is part of the railyard
// binary (railyard bench probe tcp), so it runs in Railyard's own image,
// which has no shell and no iperf3: it is the measurement `railyard bench
// run` can make on any cluster, RDMA or not.
//
// Protocol (one test per connection set): the client opens a control
// connection and sends one JSON line {"probe","streams","seconds","token"};
// the server answers {"ok":true} (or {"error":...}); the client opens
// streams data connections, each starting with the 32-character token,
// writes for the duration and half-closes them; the server counts bytes
// until every stream ends and answers on the control connection with
// {"bytes","seconds"}: what it received and over how long. Every read has a
// deadline and every header is bounded, so a bad or silent peer never
// hangs or crashes either side.
package benchprobe
