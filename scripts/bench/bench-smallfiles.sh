#!/usr/bin/env bash
# Small-file benchmark (DESIGN §5 small files): a tree shaped like a node_modules folder (FILES files in nested
# directories, sizes mostly 0.2-8 KiB with a tail to 200 KiB, made deterministically), on each target of
# one run: extract it (tar -x, then sync), read every file back with caches dropped (tar -c > /dev/null),
# and rm -rf it. Reported as files per second, the median of ROUNDS interleaved rounds, with ratios
# against gocryptfs (and libfuse3 against fuse-native); also the store's bytes on disk per logical
# byte for chunkfs targets. Targets: scripts/bench/bench-targets.sh.
# Usage (as root): scripts/bench/bench-smallfiles.sh   env: ROUNDS=3 FILES=4000 TARGETS="plain gocryptfs cfs3-r3 cfsn-r3"
#                  BASELINE_REPO=<older checkout> for base-r3 / base-ec42 targets
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
ROUNDS=${ROUNDS:-3}
FILES=${FILES:-4000}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-small}
TARGETS=${TARGETS:-"plain gocryptfs cfs3-r3 cfsn-r3"}
RESULTS=$BENCH_DIR/results.tsv
BENCH_NAME=bench-smallfiles
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare tar
mkdir -p "$BENCH_DIR/tree"

python3 - "$BENCH_DIR/tree/pkg" "$FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
r = random.Random(42)
for i in range(n):
    d = os.path.join(root, 'm%03d' % (i % 300), 'lib' if i % 3 else 'dist')
    os.makedirs(d, exist_ok=True)
    size = int(r.lognormvariate(7.6, 1.2)) if r.random() > 0.02 else r.randrange(50_000, 200_000)
    with open(os.path.join(d, 'f%05d.js' % i), 'wb') as f: f.write(r.randbytes(size))
PY
tar -C "$BENCH_DIR/tree" -cf "$BENCH_DIR/tree.tar" pkg
LOGICAL=$(du -sb --apparent-size "$BENCH_DIR/tree/pkg" | cut -f1)
rm -rf "$BENCH_DIR/tree"

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-smallfiles: target $t unavailable, skipped" >&2; fi
done

# Seconds a command takes (wall clock, 3 decimals).
seconds() { local s e; s=$(date +%s.%N); "$@"; e=$(date +%s.%N); echo "$s $e" | awk '{ printf "%.3f", $2 - $1 }'; }
extract() { tar -C "$1" -xf "$BENCH_DIR/tree.tar" && sync; }
readall() { tar -C "$1" -cf - pkg >/dev/null; }
remove() { rm -rf "$1/pkg" && sync; }

: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  round_order "$round"
  for t in "${ORDER[@]}"; do
    d=${DIR[$t]}
    drop_caches; x=$(seconds extract "$d")
    if [ "${t#cfs}" != "$t" ] || [ "${t#base}" != "$t" ]; then
      used=$(du -sb "$BENCH_DIR/$t/store/disks" | cut -f1)
      printf '%s\tbytes-per-byte\t%s\t%s\n' "$round" "$t" "$(awk -v u="$used" -v l="$LOGICAL" 'BEGIN { printf "%.2f", u / l }')" >> "$RESULTS"
    fi
    drop_caches; r=$(seconds readall "$d")
    drop_caches; m=$(seconds remove "$d")
    for pair in "extract $x" "read $r" "rm $m"; do
      set -- $pair
      printf '%s\t%s\t%s\t%s\n' "$round" "$1" "$t" "$(awk -v n="$FILES" -v s="$2" 'BEGIN { printf "%.0f", n / s }')" >> "$RESULTS"
    done
    printf 'round %s %-10s extract %ss read %ss rm %ss\n' "$round" "$t" "$x" "$r" "$m" >&2
  done
done

node - "$RESULTS" "${ACTIVE[*]}" <<'JS'
const fs = require('fs')
const [file, list] = process.argv.slice(2)
const targets = list.split(' ').filter(Boolean)
const vals = {}
for (const l of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) { const [, w, t, v] = l.split('\t'); (vals[w + ' ' + t] ??= []).push(Number(v)) }
const median = (a) => { if (!a) return NaN; const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const pad = (s, n) => String(s).padEnd(n)
let out = pad('files/s', 16) + targets.map((t) => pad(t, 22)).join('') + '\n'
for (const w of ['extract', 'read', 'rm']) {
  const g = median(vals[w + ' gocryptfs'])
  out += pad(w, 16) + targets.map((t) => { const v = median(vals[w + ' ' + t]); return pad(isNaN(g) ? String(v) : `${v} (${(v / g).toFixed(2)}x)`, 22) }).join('') + '\n'
}
out += pad('disk B/B', 16) + targets.map((t) => pad(median(vals['bytes-per-byte ' + t]) ? median(vals['bytes-per-byte ' + t]).toFixed(2) : '-', 22)).join('') + '\n'
console.log(`\nsmall files, median of rounds; (x) = ratio to gocryptfs\n${out}`)
for (const [a, b] of [['cfs3-r3', 'cfsn-r3'], ['cfs3-ec42', 'cfsn-ec42']]) {
  if (!targets.includes(a) || !targets.includes(b)) continue
  console.log(`${a} vs ${b}: ` + ['extract', 'read', 'rm'].map((w) => `${w} ${(median(vals[w + ' ' + a]) / median(vals[w + ' ' + b])).toFixed(2)}x`).join(', '))
}
// PostgreSQL against SQLite (DESIGN §9 targets: >= 0.7x over the socket, >= 0.3x with 0.5 ms round trips).
for (const t of targets.filter((x) => /-pg(net)?$/.test(x))) {
  const s = t.replace(/-pg(net)?$/, '')
  if (targets.includes(s)) console.log(`${t} vs ${s}: ` + ['extract', 'read', 'rm'].map((w) => `${w} ${(median(vals[w + ' ' + t]) / median(vals[w + ' ' + s])).toFixed(2)}x`).join(', '))
}
JS
