#!/usr/bin/env bash
# Metadata benchmark (per-request cost, DESIGN §6 and §9): FILES files through create, cold stat, chmod,
# 100-byte write, 100-byte cold read, rename and unlink (scripts/bench/meta-ops.py, a child process; caches
# dropped before every phase), with 1 and JOBS worker processes, on each target of one run
# (scripts/bench/bench-targets.sh). Reported as operations per second, the median of ROUNDS interleaved
# rounds (targets interleaved phase by phase), with ratios against gocryptfs (and chunkfs against the
# baseline build when base-r3 runs); also the serving process's CPU time per operation where this
# script started it (chunkfs, passthrough_hp): steadier than ops/s on a shared machine.
# Usage (as root): scripts/bench/bench-meta.sh   env: ROUNDS=3 FILES=2000 JOBS="1 4"
#                  PHASES="create chmod rename" (a subset, in this order; create first)
#                  TARGETS="plain gocryptfs pthp cfs-r3"
#                  PASSTHROUGH_HP=/path/to/passthrough_hp (libfuse's example, target pthp; skipped when unset)
#                  BASELINE_REPO=<older checkout with dist/ built> adds base-r3 (before/after in one run)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
ROUNDS=${ROUNDS:-3}
FILES=${FILES:-2000}
JOBS=${JOBS:-"1 4"}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-meta}
TARGETS=${TARGETS:-"plain gocryptfs pthp cfs-r3${BASELINE_REPO:+ base-r3}"}
PHASES=${PHASES:-"create stat chmod write read rename unlink"}
RESULTS=$BENCH_DIR/results.tsv
BENCH_NAME=bench-meta
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare python3

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-meta: target $t unavailable, skipped" >&2; fi
done

: > "$RESULTS"
# CPU seconds (user + system, all threads) the serving process has used, or nothing when unknown.
cpu_s() { [ -n "${PID[$1]:-}" ] && awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/${PID[$1]}/stat" 2>/dev/null || true; }
# Targets interleaved phase by phase (the machine is shared: load drifts), each in its own directory.
for round in $(seq 1 "$ROUNDS"); do
  round_order "$round"
  for j in $JOBS; do
    for p in $PHASES; do
      line="round $round jobs $j $p:"
      for t in "${ORDER[@]}"; do
        drop_caches
        c0=$(cpu_s "$t")
        v=$(python3 scripts/bench/meta-ops.py "$p" "${DIR[$t]}" "$FILES" "$j")
        c1=$(cpu_s "$t")
        printf '%s\t%s\t%s\t%s\n' "$round" "$p/$j" "$t" "$v" >> "$RESULTS"
        # The serving process's CPU microseconds per operation (less noisy than ops/s).
        [ -n "$c0" ] && printf '%s\t%s\t%s\t%s\n' "$round" "cpu $p/$j" "$t" "$(awk -v a="$c0" -v b="$c1" -v n="$FILES" 'BEGIN { printf "%.0f", (b - a) * 1e6 / n }')" >> "$RESULTS"
        line+=" $t $v"
      done
      echo "$line" >&2
    done
  done
done

node - "$RESULTS" "${ACTIVE[*]}" "$PHASES" "$JOBS" <<'JS'
const fs = require('fs')
const [file, list, phaseList, jobList] = process.argv.slice(2)
const targets = list.split(' ').filter(Boolean)
const vals = {}
for (const l of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) { const [, w, t, v] = l.split('\t'); (vals[w + ' ' + t] ??= []).push(Number(v)) }
const median = (a) => { if (!a) return NaN; const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const pad = (s, n) => String(s).padEnd(n)
const rows = jobList.split(' ').filter(Boolean).flatMap((j) => phaseList.split(' ').map((p) => `${p}/${j}`))
let out = pad('ops/s (jobs)', 14) + targets.map((t) => pad(t, 18)).join('') + '\n'
for (const w of rows) {
  const g = median(vals[w + ' gocryptfs'])
  out += pad(w, 14) + targets.map((t) => { const v = median(vals[w + ' ' + t]); return pad(isNaN(g) ? String(v) : `${v} (${(v / g).toFixed(2)}x)`, 18) }).join('') + '\n'
}
console.log(`\nmetadata ops/s, median of rounds; (x) = ratio to gocryptfs\n${out}`)
const cpuTargets = targets.filter((t) => vals['cpu create/1 ' + t] !== undefined || vals[`cpu ${rows[0]} ${t}`] !== undefined)
if (cpuTargets.length > 0) {
  let cpu = pad('cpu us/op', 14) + cpuTargets.map((t) => pad(t, 12)).join('') + '\n'
  for (const w of rows) cpu += pad(w, 14) + cpuTargets.map((t) => pad(String(median(vals['cpu ' + w + ' ' + t])), 12)).join('') + '\n'
  console.log(`serving process CPU microseconds per operation, median of rounds\n${cpu}`)
}
if (targets.includes('cfs-r3') && targets.includes('base-r3')) {
  console.log('cfs-r3 vs base-r3 ops/s: ' + rows.map((w) => `${w} ${(median(vals[w + ' cfs-r3']) / median(vals[w + ' base-r3'])).toFixed(2)}x`).join(', '))
  console.log('cfs-r3 vs base-r3 cpu/op: ' + rows.map((w) => `${w} ${(median(vals['cpu ' + w + ' cfs-r3']) / median(vals['cpu ' + w + ' base-r3'])).toFixed(2)}x`).join(', '))
}
// PostgreSQL against SQLite (DESIGN §9 targets: >= 0.7x over the socket, >= 0.3x with 0.5 ms round trips).
for (const t of targets.filter((x) => /-pg(net)?$/.test(x))) {
  const s = t.replace(/-pg(net)?$/, '')
  if (targets.includes(s)) console.log(`${t} vs ${s}: ` + rows.map((w) => `${w} ${(median(vals[w + ' ' + t]) / median(vals[w + ' ' + s])).toFixed(2)}x`).join(', '))
}
JS
