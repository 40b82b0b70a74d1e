#!/usr/bin/env bash
# Metadata benchmark (issue 20, per-request cost): FILES files through create, cold stat, chmod,
# 100-byte write, 100-byte cold read, rename and unlink (scripts/meta-ops.py, a child process; caches
# dropped before every phase), with 1 and JOBS worker processes, on each target of one run
# (scripts/bench-targets.sh). Reported as operations per second, the median of ROUNDS interleaved
# rounds, with ratios against gocryptfs (and chunkfs against the baseline build when base-r3 runs).
# Usage (as root): scripts/bench-meta.sh   env: ROUNDS=3 FILES=2000 JOBS="1 4"
#                  TARGETS="plain gocryptfs pthp cfs-r3"
#                  PASSTHROUGH_HP=/path/to/passthrough_hp (libfuse's example, target pthp; skipped when unset)
#                  BASELINE_REPO=<older checkout with dist/ built> adds base-r3 (before/after in one run)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
ROUNDS=${ROUNDS:-3}
FILES=${FILES:-2000}
JOBS=${JOBS:-"1 4"}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-meta}
TARGETS=${TARGETS:-"plain gocryptfs pthp cfs-r3${BASELINE_REPO:+ base-r3}"}
PHASES="create stat chmod write read rename unlink"
RESULTS=$BENCH_DIR/results.tsv
BENCH_NAME=bench-meta
# shellcheck source=scripts/bench-targets.sh
source scripts/bench-targets.sh
bench_prepare python3

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-meta: target $t unavailable, skipped" >&2; fi
done

: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  for t in "${ACTIVE[@]}"; do
    for j in $JOBS; do
      line="round $round $t jobs $j:"
      for p in $PHASES; do
        drop_caches
        v=$(python3 scripts/meta-ops.py "$p" "${DIR[$t]}" "$FILES" "$j")
        printf '%s\t%s\t%s\t%s\n' "$round" "$p/$j" "$t" "$v" >> "$RESULTS"
        line+=" $p $v"
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
if (targets.includes('cfs-r3') && targets.includes('base-r3')) {
  console.log('cfs-r3 vs base-r3: ' + rows.map((w) => `${w} ${(median(vals[w + ' cfs-r3']) / median(vals[w + ' base-r3'])).toFixed(2)}x`).join(', '))
}
JS
