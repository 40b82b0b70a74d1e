# Shared by the benchmarks (bench-fio.sh, bench-smallfiles.sh): targets mounted side by side in one run,
# and their cleanup. Sourced with REPO, BENCH_DIR and CHUNKFS_MOUNT_OPTS set; defines setup_target,
# drop_caches and the DIR / ACTIVE bookkeeping. Every mount and process is removed on exit.
PIDS=()
MOUNTS=()
cleanup() {
  for m in "${MOUNTS[@]}"; do fusermount -uz "$m" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

# Wait for a line in a log file (a mount's ready line), up to 60 s.
wait_line() {
  local log=$1 pattern=$2 i
  for i in $(seq 1 600); do
    grep -q "$pattern" "$log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: timed out waiting for '$pattern' in $log:" >&2; cat "$log" >&2; return 1
}

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

for m in "$BENCH_DIR"/*/mnt; do [ -d "$m" ] && fusermount -uz "$m" 2>/dev/null || true; done
rm -rf --one-file-system "$BENCH_DIR" # never descend into a mount left behind
declare -A DIR

setup_target() {
  local t=$1 base=$BENCH_DIR/$1
  mkdir -p "$base/mnt"
  case $t in
    plain) DIR[$t]=$base/mnt ;;
    bindfs)
      mkdir -p "$base/src"; bindfs "$base/src" "$base/mnt"; MOUNTS+=("$base/mnt"); DIR[$t]=$base/mnt ;;
    gocryptfs)
      mkdir -p "$base/cipher"
      gocryptfs -q -init -extpass "echo bench" -scryptn 10 "$base/cipher" >/dev/null
      gocryptfs -q -nosyslog -extpass "echo bench" "$base/cipher" "$base/mnt"; MOUNTS+=("$base/mnt"); DIR[$t]=$base/mnt ;;
    passthru)
      mkdir -p "$base/src"
      node scripts/passthrough.js "$base/src" "$base/mnt" >"$base/log" 2>&1 &
      PIDS+=($!); MOUNTS+=("$base/mnt"); wait_line "$base/log" "mounted"; DIR[$t]=$base/mnt ;;
    cfs-r3|cfs-ec42|base-r3|base-ec42)
      local layout=replica:3; [ "${t#*-}" = ec42 ] && layout=ec:4+2
      local cli=dist/cli/cli.js
      if [ "${t%%-*}" = base ]; then
        [ -n "${BASELINE_REPO:-}" ] || { echo "bench-fio: $t needs BASELINE_REPO" >&2; return 1; }
        cli=$BASELINE_REPO/dist/cli/cli.js  # builds before the move to cli/ have dist/src/cli.js
        [ -f "$cli" ] || cli=$BASELINE_REPO/dist/src/cli.js
      fi
      node "$cli" mkfs "$base/store" --disks 6 --layout "$layout" >/dev/null
      node "$cli" mount "$base/store" "$base/mnt" ${CHUNKFS_MOUNT_OPTS:+-o "$CHUNKFS_MOUNT_OPTS"} >"$base/log" 2>&1 &
      PIDS+=($!); MOUNTS+=("$base/mnt"); wait_line "$base/log" "chunkfs: mounted"; DIR[$t]=$base/mnt ;;
    *) echo "bench-fio: unknown target $t" >&2; exit 1 ;;
  esac
}

