#!/usr/bin/env bash
# rm -rf benchmark (DESIGN §5 free last): a tree of FILES fsync'd files of 70-130 KiB (past small_file_max, so
# each has shard files of its own, as in the power-loss case it was written for), then `rm -rf` of it, timed;
# then the time until the reclaim queue is empty (the reclaimer deleting the shards in the
# background). Reported as the median of ROUNDS interleaved rounds per target, with the ratio of
# each target's rm time to the first target's. Targets: scripts/bench/bench-targets.sh.
# Usage (as root): scripts/bench/bench-rm.sh   env: ROUNDS=3 FILES=1000 TARGETS="base-r3 cfs-r3"
#                  BASELINE_REPO=<older checkout> for the base-* targets
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
FILES=${FILES:-1000}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-rm}
TARGETS=${TARGETS:-"cfs-r3"}
BENCH_NAME=bench-rm
DRAIN_WAITS_MAX=3000 # x 0.1 s
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare python3

ACTIVE=()
for t in $TARGETS; do
  # Checked here: a mount that never came up would leave a plain directory to time.
  if setup_target "$t" && grep -q " $BENCH_DIR/$t/mnt fuse" /proc/mounts; then ACTIVE+=("$t"); else echo "bench-rm: target $t unavailable, skipped" >&2; fi
done

make_tree() {
  python3 - "$1/tree" "$FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, 'd%02d' % (i % 20))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'f%05d' % i), 'wb') as f:
        f.write(random.Random(i).randbytes(70_000 + random.Random(-i).randrange(60_000)))
        f.flush(); os.fsync(f.fileno())
PY
}

backlog() { node dist/cli/cli.js status "$1" --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).reclaimBacklog))'; }

# Seconds until the store's reclaim queue is empty.
drain_seconds() {
  local store=$1 s e i
  s=$(date +%s.%N)
  for i in $(seq 1 "$DRAIN_WAITS_MAX"); do [ "$(backlog "$store")" = 0 ] && break; sleep 0.1; done
  e=$(date +%s.%N)
  echo "$s $e" | awk '{ printf "%.3f", $2 - $1 }'
}

declare -A RM DRAIN
for round in $(seq 1 "$ROUNDS"); do
  for t in "${ACTIVE[@]}"; do
    d=${DIR[$t]}
    make_tree "$d"
    n=$(find "$d/tree" -type f | wc -l)
    [ "$n" -eq "$FILES" ] || { echo "bench-rm: $t: $n files made, not $FILES" >&2; exit 1; }
    s=$(date +%s.%N); rm -rf "$d/tree"; e=$(date +%s.%N)
    m=$(echo "$s $e" | awk '{ printf "%.3f", $2 - $1 }')
    r=$(drain_seconds "$BENCH_DIR/$t/store")
    RM[$t]="${RM[$t]:-} $m"; DRAIN[$t]="${DRAIN[$t]:-} $r"
    printf 'round %s %-8s rm -rf %ss, reclaim drained %ss later\n' "$round" "$t" "$m" "$r" >&2
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
[ "${#ACTIVE[@]}" -gt 0 ] || { echo "bench-rm: no target mounted" >&2; exit 1; }
first=${ACTIVE[0]}
m0=$(echo "${RM[$first]}" | median)
printf '\n%-8s %12s %14s %10s\n' target 'rm -rf (s)' 'drain (s)' "rm vs $first"
for t in "${ACTIVE[@]}"; do
  m=$(echo "${RM[$t]}" | median); r=$(echo "${DRAIN[$t]}" | median)
  printf '%-8s %12s %14s %9.2fx\n' "$t" "$m" "$r" "$(awk -v a="$m" -v b="$m0" 'BEGIN { print a / b }')"
done
