#!/usr/bin/env bash
# Device flushes (fsync + fdatasync, every source, strace) and metadata commits of ec:4+2 writes with
# transaction groups on (DESIGN §5), for this build and optionally an older checkout (BASELINE_REPO):
# a sequential write of SEQ_MIB MiB, and WRITES fsync'd random 4 KiB writes to a 64 MiB file whose
# chunks the applier rewrites. Exact counts (the same on a busy machine), and per GiB the run wrote.
# Usage: scripts/bench/bench-ec-flushes.sh   env: SEQ_MIB=256 WRITES=4000 BASELINE_REPO=/path/to/checkout
set -euo pipefail
cd "$(dirname "$0")/../.."
SEQ_MIB=${SEQ_MIB:-256}
WRITES=${WRITES:-4000}
command -v strace >/dev/null || { echo "bench-ec-flushes: needs strace (apt-get install strace)" >&2; exit 1; }
[ -f dist/scripts/bench/ec-rewrite-flushes.js ] || npx tsc -p tsconfig.bench.json
work=$(mktemp -d /var/tmp/chunkfs-ec-flushes-XXXXXX)
trap 'rm -rf "$work"' EXIT

# "flushes commits metaFlushes groups" of one run (op, count) against the store code of repo.
run() {
  local repo=$1 op=$2 n=$3 dir
  dir=$(mktemp -d "$work/s-XXXXXX")
  strace -f -qq -c -U name,calls -e trace=fsync,fdatasync -o "$dir.trace" \
    node dist/scripts/bench/ec-rewrite-flushes.js "$repo" "$dir/store" "$op" "$n" 2>"$dir.err" >/dev/null
  local f
  f=$(awk '$1 == "fsync" || $1 == "fdatasync" { s += $2 } END { print s + 0 }' "$dir.trace")
  node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").pop());
    console.log(process.argv[2], j.commits, j.metaFlushes, j.groups)' "$dir.err" "$f"
  rm -rf "$dir"
}

printf '%-8s %-14s %10s %10s %10s %8s %12s %12s\n' build run flushes commits metaflush groups 'flushes/GiB' 'commits/GiB'
for repo in ${BASELINE_REPO:+$BASELINE_REPO} .; do
  name=after; [ "$repo" = . ] || name=before
  for op in seq fsync-random; do
    if [ "$op" = seq ]; then base=base-empty n=$SEQ_MIB gib=$(awk -v m="$SEQ_MIB" 'BEGIN { print m / 1024 }')
    else base=base-file n=$WRITES gib=$(awk -v w="$WRITES" 'BEGIN { print w * 4096 / 2 ^ 30 }'); fi
    read -r f0 _ _ _ < <(run "$repo" "$base" 0)
    read -r f c m g < <(run "$repo" "$op" "$n")
    awk -v b="$name" -v op="$op" -v f="$((f - f0))" -v c="$c" -v m="$m" -v g="$g" -v gib="$gib" 'BEGIN {
      printf "%-8s %-14s %10d %10d %10d %8d %12.1f %12.1f\n", b, op, f, c, m, g, f / gib, c / gib }'
  done
done
