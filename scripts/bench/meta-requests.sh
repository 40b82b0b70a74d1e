#!/usr/bin/env bash
# FUSE requests per operation in each bench-meta phase (scripts/bench/meta-ops.py), by opcode, as the
# kernel sent them (tracefs events fuse/fuse_request_send, in a trace instance of its own, filtered to
# this mount's connection): what the mount answered in C counts as much as what reached JS.
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
for p in $PHASES; do
  sync; echo 3 > /proc/sys/vm/drop_caches
  : > "$INST/trace"
  echo 1 > "$INST/events/fuse/fuse_request_send/enable"
  python3 scripts/bench/meta-ops.py "$p" "$DIR" "$FILES" 1 >/dev/null
  echo 0 > "$INST/events/fuse/fuse_request_send/enable"
  grep -o '(FUSE_[A-Z_0-9]*)' "$INST/trace" | tr -d '()' | sort | uniq -c |
    awk -v p="$p" -v n="$FILES" '{ t += $1; s = s sprintf(" %s %.2f", substr($2, 6), $1 / n) }
      END { printf "%-7s %.2f requests/op:%s\n", p, t / n, s }'
done
rmdir "$DIR"
