#!/usr/bin/env bash
# Where the time of railyard-cni's and host-device's ADD and DEL goes:
# runs BenchmarkAddDelVsHostDevice (test/cni) under `perf record` with
# kernel tracepoints only (process exec and exit, sendto entry and exit),
# which cost a few microseconds each, unlike strace's tens, then prints for
# each plugin and command the medians of:
#   total  exec to the last thread's exit
#   moves  the netlink sends that took over 3 ms (the RTM_SETLINKs that
#          move the device between namespaces; nothing else comes near),
#          and how many there were
#   other  total less moves: the plugin's own work, start and exit included
#
#   hack/cni-trace.sh                 # ipam=false, 20 iterations
#   CNI_TRACE_BENCH='ipam=true' CNI_TRACE_N=30 hack/cni-trace.sh
#
# Needs root, perf, and the CNI tools (hack/install-cni-tools.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bench=${CNI_TRACE_BENCH:-ipam=false}
n=${CNI_TRACE_N:-20}
out=$repo/_output/cni-trace
mkdir -p "$out"
command -v perf >/dev/null || { echo "cni-trace: needs perf (linux-perf)" >&2; exit 1; }
"$repo/hack/install-cni-tools.sh" >/dev/null
(cd "$repo" && go test -c -o "$out/cni.test" ./test/cni/)
cd "$repo/test/cni"
perf record -q -a -o "$out/perf.data" \
  -e sched:sched_process_exec,sched:sched_process_exit \
  -e syscalls:sys_enter_sendto,syscalls:sys_exit_sendto -- \
  "$out/cni.test" -test.run '^$' -test.bench "AddDelVsHostDevice/$bench" -test.benchtime "${n}x" |
  grep -E '^Benchmark'
perf script -i "$out/perf.data" -F comm,pid,tid,time,event 2>/dev/null >"$out/events.txt"

# One line per plugin process after the warm-up: plugin, command (its
# processes alternate ADD, DEL), total ms, move ms, move count.
mawk_or_awk=$(command -v mawk || command -v awk)
"$mawk_or_awk" '
  $1 != "railyard-cni" && $1 != "host-device" { next }
  {
    split($2, id, "/"); pid = id[1]; tid = id[2]; t = $3 + 0; ev = $4
    plugin[pid] = $1
  }
  ev ~ /sched_process_exec/ { start[pid] = t; order[++np] = pid }
  ev ~ /sched_process_exit/ { end[pid] = t }
  ev ~ /sys_enter_sendto/   { sent[tid] = t }
  ev ~ /sys_exit_sendto/ && (tid in sent) {
    d = (t - sent[tid]) * 1000; delete sent[tid]
    if (d > 3) { moved[pid] += d; moves[pid]++ }
  }
  END {
    for (i = 1; i <= np; i++) {
      p = order[i]; k = plugin[p]
      if (++seen[k] <= 2) continue # the warm-up ADD and DEL
      cmd = (seen[k] % 2 == 1) ? "ADD" : "DEL"
      printf "%s %s %.2f %.2f %d\n", k, cmd, (end[p] - start[p]) * 1000, moved[p] + 0, moves[p] + 0
    }
  }' "$out/events.txt" >"$out/processes.txt"

median() { sort -n | "$mawk_or_awk" '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%g\n", int(m * 100 + 0.5) / 100 }'; }
printf '%-13s %-4s %4s %9s %9s %6s %9s\n' plugin cmd runs total moves count other
for plugin in railyard-cni host-device; do
  for cmd in ADD DEL; do
    rows=$(grep "^$plugin $cmd " "$out/processes.txt" || true)
    [ -n "$rows" ] || continue
    printf '%-13s %-4s %4d %9s %9s %6s %9s\n' "$plugin" "$cmd" "$(wc -l <<<"$rows")" \
      "$(cut -d' ' -f3 <<<"$rows" | median) ms" "$(cut -d' ' -f4 <<<"$rows" | median) ms" \
      "$(cut -d' ' -f5 <<<"$rows" | median)" \
      "$("$mawk_or_awk" '{ print $3 - $4 }' <<<"$rows" | median) ms"
  done
done
echo "cni-trace: one row per process in $out/processes.txt"
