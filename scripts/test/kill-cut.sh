#!/usr/bin/env bash
# The by-hand crash check (DESIGN §5 prefix rule), scripted: on a fresh store, copy SIZE MiB of random bytes into a mount with
# dd bs=1M (no fsync), kill -9 the mount after a random 3-6 s, remount and compare the file with the
# source. Prints one line per cut: the size left, the MiB inside it that differ from the source
# (must be 0: DESIGN §5 prefix rule) and how long the remount took. Not run by npm test (root, minutes).
# Usage: scripts/test/kill-cut.sh [--layout replica:3|ec:4+2] [--cuts N] [--size-mib N] [--buffer-mb N]
#                            [--kill-ms MIN-MAX] [--work DIR]
set -euo pipefail

LAYOUT=replica:3
CUTS=4
SIZE_MIB=512
BUFFER_MB=64
WORK=""
KILL_MIN_MS=3000
KILL_MAX_MS=6000
while [ $# -gt 0 ]; do
  case "$1" in
    --layout) LAYOUT=$2; shift 2 ;;
    --cuts) CUTS=$2; shift 2 ;;
    --size-mib) SIZE_MIB=$2; shift 2 ;;
    --buffer-mb) BUFFER_MB=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --kill-ms) KILL_MIN_MS=${2%-*}; KILL_MAX_MS=${2#*-}; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLI="$ROOT/dist/cli/cli.js"
[ -f "$CLI" ] || { echo "build first: npx tsc -p tsconfig.json" >&2; exit 2; }
[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/chunkfs-cut-XXXXXX)
mkdir -p "$WORK"
MNT="$WORK/mnt"
SRC="$WORK/src.bin"
MOUNT_PID=""
READY_TIMEOUT_S=120

cleanup() {
  if [ -n "$MOUNT_PID" ] && kill -0 "$MOUNT_PID" 2>/dev/null; then kill -9 "$MOUNT_PID" 2>/dev/null || true; wait "$MOUNT_PID" 2>/dev/null || true; fi
  fusermount -uz "$MNT" 2>/dev/null || true
}
trap cleanup EXIT

# Start a mount in the background and wait for its ready line; sets MOUNT_PID.
mount_store() {
  local log="$WORK/mount.log"
  : > "$log"
  node "$CLI" mount "$WORK/store" "$MNT" -o "buffer_mb=$BUFFER_MB" >"$log" 2>&1 &
  MOUNT_PID=$!
  local start=$(date +%s%N)
  for _ in $(seq 1 $((READY_TIMEOUT_S * 20))); do
    if grep -q '^chunkfs: mounted ' "$log"; then
      MOUNT_MS=$(( ($(date +%s%N) - start) / 1000000 ))
      return 0
    fi
    kill -0 "$MOUNT_PID" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.05
  done
  cat "$log" >&2
  return 1
}

stop_mount() {
  kill -TERM "$MOUNT_PID" 2>/dev/null || true
  wait "$MOUNT_PID" 2>/dev/null || true
  MOUNT_PID=""
  fusermount -uz "$MNT" 2>/dev/null || true
}

[ -f "$SRC" ] && [ "$(stat -c %s "$SRC")" -eq $((SIZE_MIB << 20)) ] || head -c $((SIZE_MIB << 20)) /dev/urandom > "$SRC"

for cut in $(seq 1 "$CUTS"); do
  rm -rf "$WORK/store"
  node "$CLI" mkfs "$WORK/store" --disks 6 --layout "$LAYOUT" >/dev/null
  mount_store
  dd if="$SRC" of="$MNT/f.bin" bs=1M status=none 2>/dev/null &
  DD_PID=$!
  DELAY_MS=$(( KILL_MIN_MS + RANDOM % (KILL_MAX_MS - KILL_MIN_MS + 1) ))
  sleep "$(printf '%d.%03d' $((DELAY_MS / 1000)) $((DELAY_MS % 1000)))"
  kill -9 "$MOUNT_PID"
  wait "$MOUNT_PID" 2>/dev/null || true
  MOUNT_PID=""
  wait "$DD_PID" 2>/dev/null || true
  mount_store
  REMOUNT_MS=$MOUNT_MS
  SIZE=$(stat -c %s "$MNT/f.bin" 2>/dev/null || echo 0)
  # MiB (of the file's size) holding any byte that differs from the source.
  DIFF_MIB=$(python3 - "$MNT/f.bin" "$SRC" "$SIZE" <<'EOF'
import sys
got, src, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad, zero = [], 0
with open(got, 'rb') as g, open(src, 'rb') as s:
    for mib in range((size + (1 << 20) - 1) >> 20):
        a = g.read(1 << 20)
        if a != s.read(1 << 20)[:len(a)]:
            bad.append(mib)
            zero += a.count(0) == len(a)
print('%d (%d all zeros) %s' % (len(bad), zero, ','.join(map(str, bad[:8]))))
EOF
)
  stop_mount
  echo "cut $cut $LAYOUT: killed after ${DELAY_MS} ms, size $((SIZE >> 20)) MiB ($SIZE B), MiB differing: $DIFF_MIB, remount ${REMOUNT_MS} ms"
done
