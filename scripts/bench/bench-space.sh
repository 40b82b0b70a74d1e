#!/usr/bin/env bash
# Space under stress (DESIGN §5 reclaim): mounts a fresh replica:3 store, runs test/helpers/stress.py
# (WORKERS processes of random creates, writes, appends, truncates, renames, unlinks and small-file
# rewrites for SECONDS), and prints every 2 s, during the load and for SETTLE_S after it, the bytes
# on the disks (du), the live logical bytes of the files (st_blocks, at most st_size), their ratio,
# the reclaim backlog and the small-file containers' dead bytes.
#   scripts/bench/bench-space.sh [WORKERS=6] [SECONDS=40] [SETTLE_S=20] [TRANSPORT=fuse3]
set -euo pipefail
WORKERS=${1:-6}
SECONDS_LOAD=${2:-40}
SETTLE_S=${3:-20}
TRANSPORT=${4:-fuse3}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CLI="node $ROOT/dist/cli/cli.js"
DIR=$(mktemp -d /tmp/chunkfs-bench-space-XXXXXX)
MNT=$DIR/mnt
mkdir -p "$MNT"
cleanup() {
  fusermount3 -u "$MNT" 2>/dev/null || fusermount -uz "$MNT" 2>/dev/null || true
  [ -n "${MOUNT_PID:-}" ] && wait "$MOUNT_PID" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
$CLI mkfs "$DIR/store" --disks 6 --layout replica:3 >/dev/null
$CLI mount "$DIR/store" "$MNT" -o "transport=$TRANSPORT" >"$DIR/mount.log" 2>&1 &
MOUNT_PID=$!
for _ in $(seq 1 100); do grep -q "^chunkfs: mounted" "$DIR/mount.log" && break; sleep 0.1; done
mkdir "$MNT/d"

sample() {
  local stored live status
  stored=$(du -sk "$DIR/store/disks" | cut -f1)
  live=$(python3 -c 'import os,sys
t=0
for r,ds,fs in os.walk(sys.argv[1]):
    for f in fs:
        try: s=os.lstat(os.path.join(r,f)); t+=min(s.st_size, s.st_blocks*512)
        except OSError: pass
print(t//1024)' "$MNT/d")
  status=$($CLI status "$DIR/store" --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["reclaimBacklog"], d["containers"]["deadBytes"]//1024)')
  printf '%6s %10s %10s %7s %8s %10s\n' "$1" "$((stored / 1024))" "$((live / 1024))" \
    "$(python3 -c "print(round($stored / max($live, 1), 2))")" ${status}
}

printf '%6s %10s %10s %7s %8s %10s\n' t_s stored_MiB live_MiB ratio backlog dead_KiB
python3 "$ROOT/test/helpers/stress.py" "$MNT/d" "$WORKERS" "$SECONDS_LOAD" $((64 << 30)) 1 >"$DIR/stress.json" &
STRESS_PID=$!
start=$(date +%s)
while kill -0 "$STRESS_PID" 2>/dev/null; do sample "$(( $(date +%s) - start ))"; sleep 2; done
wait "$STRESS_PID"
stopped=$(date +%s)
while [ $(( $(date +%s) - stopped )) -lt "$SETTLE_S" ]; do sample "$(( $(date +%s) - start ))"; sleep 2; done
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("stress: %d MiB written by %d workers, ops %s" % (r["writtenBytes"] >> 20, r["workers"], r["ops"]))' "$DIR/stress.json"
