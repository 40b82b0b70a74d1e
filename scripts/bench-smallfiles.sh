#!/usr/bin/env bash
# Small-file benchmark: a tree of FILES small files (1-16 KiB, in DIRS directories) is extracted
# with tar, read back (caches dropped first) and removed with rm -rf, on each target of
# scripts/bench-targets.sh, targets interleaved over ROUNDS rounds; the median time of each phase is
# reported, with chunkfs on libfuse3 against chunkfs on fuse-native and against gocryptfs.
# Usage (as root): scripts/bench-smallfiles.sh   env: ROUNDS=3 FILES=4000 DIRS=40
#                  BENCH_DIR=/var/tmp/chunkfs-small TARGETS="plain gocryptfs cfs3-r3 cfsn-r3"
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
FILES=${FILES:-4000}
DIRS=${DIRS:-40}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-small}
TARGETS=${TARGETS:-"plain gocryptfs cfs3-r3 cfsn-r3"}
RESULTS=$BENCH_DIR/results.tsv
BENCH_NAME=bench-smallfiles
# shellcheck source=scripts/bench-targets.sh
source scripts/bench-targets.sh
bench_prepare tar

# The tree, made once: random contents, so no layer can compress it away.
mkdir -p "$BENCH_DIR/tree"
python3 - "$BENCH_DIR/tree" "$FILES" "$DIRS" <<'PY'
import os, random, sys
root, files, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(1)
for d in range(dirs):
    os.makedirs(os.path.join(root, f'd{d:03d}'), exist_ok=True)
for i in range(files):
    with open(os.path.join(root, f'd{i % dirs:03d}', f'f{i:05d}.bin'), 'wb') as f:
        f.write(rng.randbytes(rng.randint(1024, 16384)))
PY
tar -cf "$BENCH_DIR/tree.tar" -C "$BENCH_DIR" tree
rm -rf "$BENCH_DIR/tree"

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "$BENCH_NAME: target $t unavailable, skipped" >&2; fi
done

seconds() { local s=$EPOCHREALTIME e; "$@"; e=$EPOCHREALTIME; awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f", e - s }'; }
extract() { tar -xf "$BENCH_DIR/tree.tar" -C "$1"; }
readall() { tar -cf - -C "$1" tree | wc -c >/dev/null; }
remove() { rm -rf "$1/tree"; }

: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  for t in "${ACTIVE[@]}"; do
    for phase in extract readall remove; do
      [ "$phase" = readall ] && drop_caches
      v=$(seconds "$phase" "${DIR[$t]}")
      printf '%s\t%s\t%s\t%s\n' "$round" "$phase" "$t" "$v" >> "$RESULTS"
      printf 'round %s  %-8s %-10s %s s\n' "$round" "$phase" "$t" "$v" >&2
    done
  done
done

node - "$RESULTS" "${ACTIVE[*]}" <<'JS'
const fs = require('fs')
const [file, targetList] = process.argv.slice(2)
const targets = targetList.split(' ').filter(Boolean)
const vals = {}
for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  const [, p, t, v] = line.split('\t'); (vals[p + ' ' + t] ??= []).push(Number(v))
}
const median = (a) => { if (!a || !a.length) return NaN; const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const pad = (s, n) => String(s).padEnd(n)
let out = pad('phase (s)', 12) + targets.map((t) => pad(t, 12)).join('') + '\n'
for (const p of ['extract', 'readall', 'remove']) out += pad(p, 12) + targets.map((t) => pad(median(vals[p + ' ' + t]).toFixed(2), 12)).join('') + '\n'
console.log(`\nsmall files, median seconds of rounds (lower is better)\n${out}`)
for (const [a, b] of [['cfs3-r3', 'cfsn-r3'], ['cfs3-r3', 'gocryptfs'], ['cfsn-r3', 'gocryptfs']]) {
  if (!targets.includes(a) || !targets.includes(b)) continue
  console.log(`${a} speed vs ${b}: ` + ['extract', 'readall', 'remove'].map((p) => `${p} ${(median(vals[p + ' ' + b]) / median(vals[p + ' ' + a])).toFixed(2)}x`).join(', '))
}
JS
