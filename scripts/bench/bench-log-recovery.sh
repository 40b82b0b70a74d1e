#!/usr/bin/env bash
# Recovery with a full intent log (DESIGN §5): fsync'd random 4 KiB writes fill the log's backlog
# to FILL_PCT of its bound (as `chunkfs status --json` reports it), the mount is killed with kill -9,
# and the time from `chunkfs mount` to its "mounted" line is measured (the log is replayed before
# the mount answers). ROUNDS rounds; caches dropped before each remount.
# Usage (as root): scripts/bench/bench-log-recovery.sh   env: ROUNDS=3 LAYOUT=replica:3 FILL_PCT=90 BENCH_DIR=/var/tmp/chunkfs-logrec
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
LAYOUT=${LAYOUT:-replica:3}
FILL_PCT=${FILL_PCT:-90}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-logrec}
CLI=dist/cli/cli.js
# A writer stops after this many seconds even if the backlog never fills (the applier keeps up).
FILL_WAIT_S=120

[ "$(id -u)" -eq 0 ] || { echo "bench-log-recovery: run as root (mounts, drop_caches)" >&2; exit 1; }
command -v fio >/dev/null || { echo "bench-log-recovery: needs fio (apt-get install fio)" >&2; exit 1; }
mnt=$BENCH_DIR/mnt store=$BENCH_DIR/store
fusermount3 -uz "$mnt" 2>/dev/null || true
rm -rf "$BENCH_DIR" && mkdir -p "$mnt"
cleanup() {
  [ -n "${FIO:-}" ] && kill -9 "$FIO" 2>/dev/null || true
  fusermount3 -uz "$mnt" 2>/dev/null || true
  pkill -9 -f "$CLI mount $store" 2>/dev/null || true
  rm -rf "$BENCH_DIR"
}
trap cleanup EXIT
node "$CLI" mkfs "$store" --disks 6 --layout "$LAYOUT" >/dev/null

# Share of the intent bound held now (the larger of intents and bytes), in percent.
backlog_pct() {
  node "$CLI" status "$mnt" --json 2>/dev/null | node -e '
    let s = ""; process.stdin.on("data", (d) => { s += d }).on("end", () => {
      const find = (o) => { if (o === null || typeof o !== "object") return null
        if ("intentsMax" in o && "bytesMax" in o) return o
        for (const v of Object.values(o)) { const r = find(v); if (r) return r } return null }
      const b = find(JSON.parse(s)); if (!b) { console.log(0); return }
      console.log(Math.floor(100 * Math.max(Number(b.intents) / Number(b.intentsMax), Number(b.bytes) / Number(b.bytesMax)))) })'
}

mount_timed() {
  local t0 t1
  t0=$(date +%s%N)
  node "$CLI" mount "$store" "$mnt" -o transport=fuse3 >"$BENCH_DIR/log" 2>&1 &
  MOUNT=$!
  for _ in $(seq 1 6000); do grep -q "chunkfs: mounted" "$BENCH_DIR/log" && break; sleep 0.01; done
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

printf 'round\tbacklog_pct\tremount_ms\n'
for round in $(seq 1 "$ROUNDS"); do
  mount_timed >/dev/null
  [ -f "$mnt/rand.dat" ] || (cd "$mnt" && fio --name=layout --rw=write --bs=1M --size=256M --filename=rand.dat --end_fsync=1 >/dev/null)
  (cd "$mnt" && exec fio --name=fill --ioengine=psync --rw=randwrite --bs=4k --size=256M --fsync=1 \
    --time_based --runtime="$FILL_WAIT_S" --filename=rand.dat >/dev/null 2>&1) &
  FIO=$!
  pct=0
  for _ in $(seq 1 $((FILL_WAIT_S * 4))); do
    pct=$(backlog_pct); [ -n "${VERBOSE:-}" ] && echo "backlog $pct%" >&2
    [ "$pct" -ge "$FILL_PCT" ] && break
    sleep 0.25
  done
  kill -9 "$MOUNT"; wait "$MOUNT" 2>/dev/null || true
  kill -9 "$FIO" 2>/dev/null || true; wait "$FIO" 2>/dev/null || true; FIO=
  fusermount3 -uz "$mnt" 2>/dev/null || true  # gone already when the mount had auto_unmount
  sync; echo 3 >/proc/sys/vm/drop_caches
  ms=$(mount_timed)
  printf '%s\t%s\t%s\n' "$round" "$pct" "$ms"
  fusermount3 -u "$mnt"; wait "$MOUNT" 2>/dev/null || true
done
