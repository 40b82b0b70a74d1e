#!/usr/bin/env bash
# Tiny-append benchmark (DESIGN §5): one process appends APPENDS records of RECORD_BYTES bytes
# to one file opened O_APPEND (a log writer), one write(2) each, then closes the file and the mount is
# synced; the file is read back and compared with what was written. Reported as appends per second
# (the write loop plus close and sync), the median of ROUNDS interleaved rounds, with ratios against
# gocryptfs in the same run. A run that exceeds TIMEOUT_S counts as 0 appends/s (it did not finish).
# Targets: scripts/bench/bench-targets.sh.
# Usage (as root): scripts/bench/bench-appends.sh   env: ROUNDS=3 APPENDS=300000 RECORD_BYTES=4 TIMEOUT_S=300
#                  TARGETS="plain gocryptfs cfs3-r3 cfsn-r3" BASELINE_REPO=<older checkout> for base-* targets
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
APPENDS=${APPENDS:-300000}
RECORD_BYTES=${RECORD_BYTES:-4}
TIMEOUT_S=${TIMEOUT_S:-300}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-appends}
TARGETS=${TARGETS:-"plain gocryptfs cfs3-r3 cfsn-r3"}
RESULTS=$BENCH_DIR/results.tsv
BENCH_NAME=bench-appends
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare python3

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-appends: target $t unavailable, skipped" >&2; fi
done

# Append, close, sync; print the seconds taken, or nothing after TIMEOUT_S. Record i is i as
# RECORD_BYTES little-endian bytes (so a lost, doubled or misplaced record fails the check).
append_run() {
  timeout "$TIMEOUT_S" python3 - "$1" "$APPENDS" "$RECORD_BYTES" <<'PY' || true
import os, sys, time
path, n, rb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mask = (1 << (8 * rb)) - 1
start = time.monotonic()
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
w = os.write
for i in range(n):
    w(fd, (i & mask).to_bytes(rb, 'little'))
os.close(fd)
os.sync()
print('%.3f' % (time.monotonic() - start))
PY
}

check_run() {
  python3 - "$1" "$APPENDS" "$RECORD_BYTES" <<'PY'
import sys
path, n, rb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mask = (1 << (8 * rb)) - 1
want = b''.join((i & mask).to_bytes(rb, 'little') for i in range(n))
got = open(path, 'rb').read()
if got != want:
    at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
    sys.exit('bench-appends: %s differs from what was written (%d bytes, %d expected; first difference at %d)' % (path, len(got), len(want), at))
PY
}

: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  for t in "${ACTIVE[@]}"; do
    f=${DIR[$t]}/appends.log
    drop_caches; s=$(append_run "$f")
    if [ -z "$s" ]; then
      echo "round $round $t: did not finish in ${TIMEOUT_S}s" >&2
      printf '%s\t%s\t0\n' "$round" "$t" >> "$RESULTS"
    else
      check_run "$f"
      printf '%s\t%s\t%s\n' "$round" "$t" "$(awk -v n="$APPENDS" -v s="$s" 'BEGIN { printf "%.0f", n / s }')" >> "$RESULTS"
      printf 'round %s %-10s %s appends in %ss\n' "$round" "$t" "$APPENDS" "$s" >&2
    fi
    rm -f "$f"
  done
done

node - "$RESULTS" "${ACTIVE[*]}" "$APPENDS" "$RECORD_BYTES" <<'JS'
const fs = require('fs')
const [file, list, n, rb] = process.argv.slice(2)
const targets = list.split(' ').filter(Boolean)
const vals = {}
for (const l of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) { const [, t, v] = l.split('\t'); (vals[t] ??= []).push(Number(v)) }
const median = (a) => { if (!a) return NaN; const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const g = median(vals.gocryptfs)
console.log(`\n${n} appends of ${rb} bytes, appends/s, median of rounds; (x) = ratio to gocryptfs`)
for (const t of targets) { const v = median(vals[t]); console.log(`${t.padEnd(12)} ${String(v).padStart(8)}${isNaN(g) || g === 0 ? '' : ` (${(v / g).toFixed(2)}x)`}`) }
JS
