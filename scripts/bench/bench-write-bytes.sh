#!/usr/bin/env bash
# Bytes the mount writes per fsync'd random 4 KiB write (DESIGN §5 intent log: the bytes written
# to the devices per fsync'd 4 KiB write, log and apply), through the mount with fio, on each layout. strace
# records every write system call of the mount process with the file it went to, from the first
# write to the end of unmount (unmount drains the intent log, so every write's apply is counted):
# - log:   the intent log file (intent.log, SQLite stores' partial writes) and the metadata database
#          and its WAL (meta.db*: intents as rows, commits, checkpoints that copy WAL pages into meta.db)
#          (DESIGN §5);
# - apply: shard files (disks/*/.chunks): the applier's patches (replica) or new EC versions;
# - other: anything else (the mount's own log, eventfd and pipe wake-ups between its threads at 8 and 1
#          bytes a call); answers on /dev/fuse are not counted.
# Exact byte counts of system calls, not timings: the same on a busy or an idle machine. What the
# device's own file system adds (journal, metadata) is not counted.
# Usage (as root): scripts/bench/bench-write-bytes.sh   env: WRITES=2000 FILE_MB=64 LAYOUTS="replica:3 ec:4+2"
set -euo pipefail
cd "$(dirname "$0")/../.."
WRITES=${WRITES:-2000}
FILE_MB=${FILE_MB:-64}
LAYOUTS=${LAYOUTS:-"replica:3 ec:4+2"}
# Bound on the wait for a mount to appear (tenths of a second).
MOUNT_WAIT_TENTHS=100
for tool in strace fio; do
  command -v "$tool" >/dev/null || { echo "bench-write-bytes: needs $tool (apt-get install $tool)" >&2; exit 1; }
done
[ -f dist/cli/cli.js ] || npx tsc -p tsconfig.json
work=$(mktemp -d /var/tmp/chunkfs-write-bytes-XXXXXX)
cleanup() { for m in "$work"/*/mnt; do mountpoint -q "$m" 2>/dev/null && fusermount3 -uz "$m"; done; rm -rf "$work"; }
trap cleanup EXIT
[ -n "${KEEP_TRACE:-}" ] && trap 'for m in "$work"/*/mnt; do mountpoint -q "$m" 2>/dev/null && fusermount3 -uz "$m"; done; echo "traces kept in $work" >&2' EXIT

wait_mounted() {
  for _ in $(seq "$MOUNT_WAIT_TENTHS"); do mountpoint -q "$1" && return 0; sleep 0.1; done
  echo "bench-write-bytes: $1 did not mount: $(cat "$2")" >&2
  exit 1
}

# Mount store on mnt (under strace when a trace path is given), in the background; sets MOUNT_PID.
start_mount() {
  local store=$1 mnt=$2 log=$3 trace=${4:-}
  if [ -n "$trace" ]; then
    strace -ff -qq -y -s 0 -e trace=write,pwrite64,writev,pwritev,pwritev2 -o "$trace" \
      node dist/cli/cli.js mount "$store" "$mnt" >"$log" 2>&1 &
  else
    node dist/cli/cli.js mount "$store" "$mnt" >"$log" 2>&1 &
  fi
  MOUNT_PID=$!
  wait_mounted "$mnt" "$log"
}

stop_mount() {
  fusermount3 -u "$1"
  wait "$MOUNT_PID" || true
}

# Sums of the bytes written (return values) by class: "log apply other".
classify() {
  awk '
    / = [0-9]+$/ {
      n = $NF
      if ($0 ~ /<\/dev\/fuse>/) next # answers to the kernel, not device bytes
      if ($0 ~ /<[^>]*\/(meta\.db|intent\.log)[^>]*>/) logb += n
      else if ($0 ~ /<[^>]*\/disks\/[^>]*\/\.chunks\/[^>]*>/) applyb += n
      else otherb += n
    }
    END { printf "%d %d %d\n", logb, applyb, otherb }' "$1".*
}

run_layout() {
  local layout=$1 dir
  dir=$(mktemp -d "$work/l-XXXXXX")
  mkdir "$dir/mnt"
  node dist/cli/cli.js mkfs "$dir/store" --disks 6 --layout "$layout" >/dev/null
  # The file is written whole first, in a mount of its own, so the traced mount sees only the writes.
  start_mount "$dir/store" "$dir/mnt" "$dir/log0"
  fio --name=layout --rw=write --bs=1M --size="${FILE_MB}M" --filename="$dir/mnt/f" --fallocate=none --end_fsync=1 >/dev/null
  stop_mount "$dir/mnt"
  start_mount "$dir/store" "$dir/mnt" "$dir/log1" "$dir/trace"
  fio --name=fsyncwrite --rw=randwrite --bs=4k --size="${FILE_MB}M" --filename="$dir/mnt/f" --fsync=1 \
    --number_ios="$WRITES" --ioengine=psync --fallocate=none >/dev/null
  stop_mount "$dir/mnt"
  read -r log apply other < <(classify "$dir/trace")
  awk -v l="$layout" -v n="$WRITES" -v a="$log" -v b="$apply" -v c="$other" 'BEGIN {
    printf "%-10s %10.0f %10.0f %10.0f %10.0f %8.1fx\n", l, a / n, b / n, c / n, (a + b + c) / n, (a + b + c) / n / 4096 }'
}

printf '%-10s %10s %10s %10s %10s %9s\n' layout log_B apply_B other_B total_B "/ 4 KiB"
for layout in $LAYOUTS; do run_layout "$layout"; done
echo "(bytes per fsync'd 4 KiB write, $WRITES writes on a ${FILE_MB} MiB file, mount to unmount)"
