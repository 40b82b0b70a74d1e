#!/usr/bin/env bash
# FUSE requests per operation in each bench-meta phase (scripts/bench/meta-ops.py), by opcode, as the
# kernel sent them (tracefs events fuse/fuse_request_send, in a trace instance of its own, filtered to
# this mount's connection): what the mount answered in C counts as much as what reached JS.
# With METRICS_URL (a chunkfs mount's -o metrics address, http://HOST:PORT/metrics) also the requests
# JavaScript answered per operation (the rest were answered in C: DESIGN §6 "Answers in C"); with
# MOUNT_PID the mount's CPU microseconds per operation (all its threads' schedstat).
# Usage (as root): scripts/bench/meta-requests.sh MOUNTPOINT [FILES] [PHASES]
set -euo pipefail
cd "$(dirname "$0")/../.."
MNT=$1
FILES=${2:-500}
PHASES=${3:-"create stat chmod write read rename unlink"}
TRACE=/sys/kernel/tracing
[ -d "$TRACE/events/fuse" ] || mount -t tracefs nodev "$TRACE"
INST=$TRACE/instances/meta-requests-$$
mkdir "$INST"
trap 'echo 0 > "$INST/events/fuse/fuse_request_send/enable"; rmdir "$INST"' EXIT
minor=$(mountpoint -d "$MNT" | cut -d: -f2)
echo "connection == $minor" > "$INST/events/fuse/fuse_request_send/filter"
echo 16384 > "$INST/buffer_size_kb"
DIR=$MNT/meta-requests.$$
mkdir "$DIR"
# Requests JavaScript answered so far (every op it answers is counted by the metrics), or 0.
js_ops() {
  [ -n "${METRICS_URL:-}" ] || { echo 0; return; }
  curl -s "$METRICS_URL" | awk '/^chunkfs_fuse_op_duration_seconds_count/ { s += $2 } END { printf "%.0f\n", s }'
}
# Nanoseconds on a CPU of every thread of MOUNT_PID, or 0.
cpu_ns() {
  [ -n "${MOUNT_PID:-}" ] || { echo 0; return; }
  cat /proc/"$MOUNT_PID"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
for p in $PHASES; do
  sync; echo 3 > /proc/sys/vm/drop_caches
  : > "$INST/trace"
  j0=$(js_ops); c0=$(cpu_ns)
  echo 1 > "$INST/events/fuse/fuse_request_send/enable"
  python3 scripts/bench/meta-ops.py "$p" "$DIR" "$FILES" 1 >/dev/null
  echo 0 > "$INST/events/fuse/fuse_request_send/enable"
  j1=$(js_ops); c1=$(cpu_ns)
  extra=""
  [ -n "${METRICS_URL:-}" ] && extra+=$(awk -v d=$((j1 - j0)) -v n="$FILES" 'BEGIN { printf "; in JS %.2f/op", d / n }')
  [ -n "${MOUNT_PID:-}" ] &&
    extra+=$(awk -v d=$((c1 - c0)) -v n="$FILES" 'BEGIN { printf "; mount CPU %.1f us/op", d / n / 1000 }')
  grep -o '(FUSE_[A-Z_0-9]*)' "$INST/trace" | tr -d '()' | sort | uniq -c |
    awk -v p="$p" -v n="$FILES" -v extra="$extra" '{ t += $1; s = s sprintf(" %s %.2f", substr($2, 6), $1 / n) }
      END { printf "%-7s %.2f requests/op:%s%s\n", p, t / n, s, extra }'
done
rmdir "$DIR"
