#!/usr/bin/env bash
# Dispatch benchmark of the libfuse3 transport: the JS thread reading /dev/fuse itself (target
# cfs3-r3, with its default spin, and cfs3ns-r3, spin_us=0) against libfuse's reader threads
# handing requests over (-o dispatch=threads, cfs3t-r3: removed since for what this measured,
# native/fuse3/session.h; it runs from BASELINE_REPO, a build from before, e.g. cf02b38), in one
# run, targets alternated round by round (scripts/bench/bench-targets.sh round_order). Phases, each one FUSE
# request per operation (scripts/bench/dispatch-ops.py): chmod, cold stat, 4 KiB O_DIRECT random
# reads and writes, with 1 and JOBS worker processes. Reported per phase as the median over rounds
# of operations per second and of the mount process's CPU microseconds per operation (user +
# system, all its threads: the libfuse threads count too).
# Usage (as root): BASELINE_REPO=/path/to/checkout scripts/bench/bench-dispatch.sh
#                  env: ROUNDS=5 OPS=20000 JOBS="1 4" TARGETS="cfs3-r3 cfs3ns-r3 cfs3t-r3"
#                  PHASES="chmod stat read write"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
OPS=${OPS:-20000}
JOBS=${JOBS:-"1 4"}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-dispatch}
TARGETS=${TARGETS:-"cfs3-r3 cfs3ns-r3 cfs3t-r3"}
PHASES=${PHASES:-"chmod stat read write"}
RESULTS=$BENCH_DIR/results.tsv
BENCH_NAME=bench-dispatch
# The stat phase's operations per worker: one pass over its files (dispatch-ops.py FILES_PER_JOB),
# so every stat is a lookup (caches are dropped before the phase).
STAT_OPS_PER_JOB=2000
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare python3

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-dispatch: target $t unavailable, skipped" >&2; fi
done
maxjobs=$(printf '%s\n' $JOBS | sort -n | tail -1)
for t in "${ACTIVE[@]}"; do python3 scripts/bench/dispatch-ops.py setup "${DIR[$t]}" "$maxjobs" "$maxjobs" >/dev/null; done

: > "$RESULTS"
# CPU seconds (user + system, all threads) of the mount process.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/${PID[$1]}/stat"; }
for round in $(seq 1 "$ROUNDS"); do
  round_order "$round"
  for j in $JOBS; do
    for p in $PHASES; do
      ops=$OPS
      [ "$p" = stat ] && ops=$((STAT_OPS_PER_JOB * j))
      line="round $round jobs $j $p:"
      for t in "${ORDER[@]}"; do
        drop_caches
        c0=$(cpu_s "$t")
        v=$(python3 scripts/bench/dispatch-ops.py "$p" "${DIR[$t]}" "$ops" "$j")
        c1=$(cpu_s "$t")
        cpu=$(awk -v a="$c0" -v b="$c1" -v n="$ops" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')
        printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$p/$j" "$t" "$v" "$cpu" >> "$RESULTS"
        line+=" $t $v/s ${cpu}us"
      done
      echo "$line" >&2
    done
  done
done

node - "$RESULTS" "${ACTIVE[*]}" "$PHASES" "$JOBS" <<'JS'
const fs = require('fs')
const [file, list, phaseList, jobList] = process.argv.slice(2)
const targets = list.split(' ').filter(Boolean)
const ops = {}
const cpu = {}
for (const l of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  const [, w, t, v, c] = l.split('\t')
  ;(ops[w + ' ' + t] ??= []).push(Number(v))
  ;(cpu[w + ' ' + t] ??= []).push(Number(c))
}
const median = (a) => { if (!a) return NaN; const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const pad = (s, n) => String(s).padEnd(n)
const rows = jobList.split(' ').filter(Boolean).flatMap((j) => phaseList.split(' ').map((p) => `${p}/${j}`))
let out = pad('phase/jobs', 12) + targets.map((t) => pad(t + ' ops/s', 18) + pad('us/op', 8)).join('') + '\n'
for (const w of rows) out += pad(w, 12) + targets.map((t) => pad(median(ops[w + ' ' + t]), 18) + pad(median(cpu[w + ' ' + t]), 8)).join('') + '\n'
console.log(`\ndispatch, median of rounds: operations per second, and the mount's CPU microseconds per operation\n${out}`)
JS
