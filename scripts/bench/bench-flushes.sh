#!/usr/bin/env bash
# Device flushes (fsync + fdatasync system calls, every source: shards, directories, SQLite) per store
# operation, for this build and optionally an older checkout (BASELINE_REPO), counted with strace.
# The counts are exact, not timings: the same on a busy or an idle machine.
# Usage: scripts/bench/bench-flushes.sh   env: COUNT=50 BASELINE_REPO=/path/to/older/checkout
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNT=${COUNT:-50}
OPS="create mkdir rename chmod setxattr unlink write4k-fsync append4m-fsync rm-3chunks"
command -v strace >/dev/null || { echo "bench-flushes: needs strace (apt-get install strace)" >&2; exit 1; }
[ -f dist/scripts/bench/flush-counts.js ] || npx tsc -p tsconfig.bench.json
work=$(mktemp -d /var/tmp/chunkfs-flushes-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Flush calls of one run (op, count) against the store code of repo.
flushes() {
  local repo=$1 op=$2 n=$3 dir
  dir=$(mktemp -d "$work/s-XXXXXX")
  strace -f -qq -c -U name,calls -e trace=fsync,fdatasync -o "$dir.trace" \
    node dist/scripts/bench/flush-counts.js "$repo" "$dir/store" "$op" "$n" >/dev/null
  awk '$1 == "fsync" || $1 == "fdatasync" { s += $2 } END { print s + 0 }' "$dir.trace"
}

printf '%-16s' op; for r in ${BASELINE_REPO:+before} after; do printf '%12s' "$r"; done; echo
for op in $OPS; do
  printf '%-16s' "$op"
  for repo in ${BASELINE_REPO:+$BASELINE_REPO} .; do
    base=$(flushes "$repo" none 0)
    total=$(flushes "$repo" "$op" "$COUNT")
    awk -v t="$total" -v b="$base" -v n="$COUNT" 'BEGIN { printf "%12.2f", (t - b) / n }'
  done
  echo
done
