#!/usr/bin/env bash
# Power-loss campaign (DESIGN §5: what survives a crash). Opt-in: needs root, FUSE and a LazyFS binary; not run by
# npm test or CI.
#
# LazyFS (https://github.com/dsrhaslab/lazyfs) is a FUSE file system that keeps every byte not yet
# fsync'd in its own page cache and drops it on `echo lazyfs::clear-cache > FIFO`. This script does
# not build it. To get one: clone the public repository and build it per its README
# (libs/libpcache/build.sh, then lazyfs/build.sh; on Debian it needs cmake, g++, libfuse3-dev, and
# toml11 and spdlog, which its CMake files fetch from GitHub, or Debian's libtoml11-dev and
# libspdlog-dev if you point them at those). Then: LAZYFS=/path/to/lazyfs/build/lazyfs scripts/test/powerloss.sh
#
# What it does, per round: a fresh store (mkfs) whose disk directories and meta.db live under a
# LazyFS mount; chunkfs mounted on top; in a replica:3 directory and an ec:4+2 directory
# (setfattr user.chunkfs.layout), writers that log what was acknowledged (scripts/test/powerloss/writer.py):
# an fsync'ing appender, a non-fsync'ing appender, an in-place 16 KiB overwriter (fsync every 8) and a
# rename-heavy writer (write temp, fsync, rename over one of 8 names, fsync the directory every 4).
# After a random delay: SIGSTOP the writers and chunkfs (so nothing reaches LazyFS after the drop, as
# after a real power cut), lazyfs::clear-cache, kill -9 chunkfs, fusermount -uz, remount (timed) and
# check (scripts/test/powerloss/check.py): fsync'd bytes lost (must be 0) and files that are not a prefix
# of what was written, or whose overwritten 16 KiB blocks are neither old nor new (must be 0).
# Prints a summary table; exits 1 if any round lost an fsync'd byte, broke a prefix or failed to remount.
#
# What LazyFS does NOT simulate: it models the page cache of file data only. Namespace operations
# (create, mkdir, unlink, rename, link) pass straight through to the file system below, so the
# creation of a shard file, its rename from temp to final name and directory entries in general are
# never lost by clear-cache, even without an fsync of the directory; truncate is applied below at
# once too. And clear-cache drops ALL unsynced data at once: it never lets an arbitrary subset of
# unsynced pages reach the disk in some order (as a real cut may), never tears a single write below
# its cache page, and does not simulate a disk's volatile write cache or a flush that lies. So it
# exercises chunkfs's data-before-metadata ordering and SQLite's WAL under a lost page cache, but
# not lost directory entries (which DESIGN §5 guards against
# with a directory fsync per touched shard directory).
#
# Then RM_ROUNDS rm -rf rounds (DESIGN §5 free last): a tree of RM_FILES fsync'd files (scripts/test/powerloss/tree.py,
# most with shard files of their own), `rm -rf` of it, and the cut a random 0.2-3 s into the rm. The
# unlinks live in meta.db's WAL until the next full commit and LazyFS drops them, while the reclaimer's
# shard deletes pass straight through it, so every file that is back after the remount must read
# its whole content (free last, DESIGN §5).
#
# Usage: LAZYFS=/path/to/lazyfs scripts/test/powerloss.sh [--rounds N] [--min-ms MS] [--max-ms MS]
#                                                    [--work DIR] [--cache-size 3gb]
#                                                    [--rm-rounds N] [--rm-files N]
set -euo pipefail

ROUNDS=10
MIN_MS=3000
MAX_MS=15000
WORK=""
CACHE_SIZE=3gb
RM_ROUNDS=3
RM_FILES=600
RM_MIN_MS=200
RM_MAX_MS=3000
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --min-ms) MIN_MS=$2; shift 2 ;;
    --max-ms) MAX_MS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --cache-size) CACHE_SIZE=$2; shift 2 ;;
    --rm-rounds) RM_ROUNDS=$2; shift 2 ;;
    --rm-files) RM_FILES=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLI="$ROOT/dist/cli/cli.js"
HERE="$ROOT/scripts/test/powerloss"
[ -f "$CLI" ] || { echo "build first: npx tsc -p tsconfig.json" >&2; exit 2; }
[ -n "${LAZYFS:-}" ] && [ -x "$LAZYFS" ] || { echo "set LAZYFS=/path/to/a/built/lazyfs binary (see this script's header)" >&2; exit 2; }
command -v setfattr >/dev/null || { echo "needs setfattr (attr package)" >&2; exit 2; }
[ -n "$WORK" ] || WORK=$(mktemp -d /var/tmp/chunkfs-powerloss-XXXXXX)
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
LZROOT="$WORK/lazyfs.root"   # LazyFS's backing directory
LZMNT="$WORK/lazyfs.mnt"     # LazyFS mount: the store lives here
STORE="$LZMNT/store"
MNT="$WORK/mnt"              # chunkfs mount
FIFO="$WORK/faults.fifo"
LZLOG="$WORK/lazyfs.out"
mkdir -p "$LZROOT" "$LZMNT" "$MNT"
LZ_PID=""
MOUNT_PID=""
WRITER_PIDS=()
READY_TIMEOUT_S=300

kill_writers() {
  local p
  for p in "${WRITER_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${WRITER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  WRITER_PIDS=()
}

cleanup() {
  set +e
  kill_writers
  if [ -n "${RM_PID:-}" ]; then kill -9 "$RM_PID" 2>/dev/null; wait "$RM_PID" 2>/dev/null; fi
  if [ -n "$MOUNT_PID" ]; then kill -9 "$MOUNT_PID" 2>/dev/null; wait "$MOUNT_PID" 2>/dev/null; fi
  fusermount -uz "$MNT" 2>/dev/null
  if [ -n "$LZ_PID" ]; then
    fusermount -u "$LZMNT" 2>/dev/null || fusermount -uz "$LZMNT" 2>/dev/null
    kill "$LZ_PID" 2>/dev/null; wait "$LZ_PID" 2>/dev/null
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$WORK/lazyfs.toml" <<TOML
[faults]
fifo_path="$FIFO"
[cache]
apply_eviction=false
[cache.simple]
custom_size="$CACHE_SIZE"
blocks_per_page=1
[filesystem]
log_all_operations=false
logfile=""
TOML

"$LAZYFS" "$LZMNT" --config-path "$WORK/lazyfs.toml" -o allow_other -o modules=subdir -o "subdir=$LZROOT" -f >"$LZLOG" 2>&1 &
LZ_PID=$!
for _ in $(seq 1 1200); do
  grep -q 'waiting for fault commands' "$LZLOG" && mountpoint -q "$LZMNT" && break
  kill -0 "$LZ_PID" 2>/dev/null || { cat "$LZLOG" >&2; exit 1; }
  sleep 0.1
done
mountpoint -q "$LZMNT" || { echo "LazyFS did not mount" >&2; exit 1; }
echo "round   cut_ms: writers ran this long; store_MiB: the store below LazyFS after the cut; files: checked;"
echo "        fsync_MiB: acknowledged by fsync; dropped_MiB: appended without fsync and gone after the cut;"
echo "        lost_B: fsync'd bytes lost (must be 0); non_prefix: files not a prefix / torn blocks (must be 0)"

clear_cache() {
  local before after
  before=$(grep -c 'cache is cleared' "$LZLOG" || true)
  echo "lazyfs::clear-cache" > "$FIFO"
  for _ in $(seq 1 600); do
    after=$(grep -c 'cache is cleared' "$LZLOG" || true)
    [ "$after" -gt "$before" ] && return 0
    sleep 0.05
  done
  echo "clear-cache not acknowledged by LazyFS" >&2
  return 1
}

# Start chunkfs in the background, wait for its ready line; sets MOUNT_PID and MOUNT_MS (-1: failed).
mount_store() {
  local log=$1
  : > "$log"
  node "$CLI" mount "$STORE" "$MNT" >"$log" 2>&1 &
  MOUNT_PID=$!
  local start; start=$(date +%s%N)
  for _ in $(seq 1 $((READY_TIMEOUT_S * 20))); do
    if grep -q '^chunkfs: mounted ' "$log"; then
      MOUNT_MS=$(( ($(date +%s%N) - start) / 1000000 ))
      return 0
    fi
    kill -0 "$MOUNT_PID" 2>/dev/null || { MOUNT_PID=""; MOUNT_MS=-1; return 1; }
    sleep 0.05
  done
  MOUNT_MS=-1
  return 1
}

stop_mount() {
  if [ -n "$MOUNT_PID" ]; then kill -TERM "$MOUNT_PID" 2>/dev/null || true; wait "$MOUNT_PID" 2>/dev/null || true; fi
  MOUNT_PID=""
  fusermount -uz "$MNT" 2>/dev/null || true
}

# A round's directory and a new replica:3 store, mounted (its log: DIR/mount1.log).
fresh_round() {
  rm -rf "$1"; mkdir -p "$1"
  rm -rf "$STORE"
  node "$CLI" mkfs "$STORE" --disks 6 --layout replica:3 >/dev/null
  mount_store "$1/mount1.log" || { cat "$1/mount1.log" >&2; exit 1; }
}

FAIL=0
RESULTS=()
for round in $(seq 1 "$ROUNDS"); do
  RD="$WORK/round$round"
  fresh_round "$RD"
  mkdir -p "$RD/logs"
  mkdir "$MNT/r3" "$MNT/ec"
  setfattr -n user.chunkfs.layout -v ec:4+2 "$MNT/ec"
  CHECKS=()
  for dir in r3 ec; do
    python3 "$HERE/writer.py" append "$MNT/$dir" sync fsync "$RD/logs/$dir-sync.log" 2>"$RD/logs/$dir-sync.err" & WRITER_PIDS+=($!)
    python3 "$HERE/writer.py" append "$MNT/$dir" nosync nofsync "$RD/logs/$dir-nosync.log" 2>"$RD/logs/$dir-nosync.err" & WRITER_PIDS+=($!)
    python3 "$HERE/writer.py" overwrite "$MNT/$dir" ow "$RD/logs/$dir-ow.log" 2>"$RD/logs/$dir-ow.err" & WRITER_PIDS+=($!)
    python3 "$HERE/writer.py" rename "$MNT/$dir" ren "$RD/logs/$dir-ren.log" 2>"$RD/logs/$dir-ren.err" & WRITER_PIDS+=($!)
    CHECKS+=("append:$MNT/$dir:sync:$RD/logs/$dir-sync.log" "append:$MNT/$dir:nosync:$RD/logs/$dir-nosync.log"
             "overwrite:$MNT/$dir:ow:$RD/logs/$dir-ow.log" "rename:$MNT/$dir:ren:$RD/logs/$dir-ren.log")
  done
  DELAY_MS=$(( MIN_MS + (RANDOM * 32768 + RANDOM) % (MAX_MS - MIN_MS + 1) ))
  sleep "$(printf '%d.%03d' $((DELAY_MS / 1000)) $((DELAY_MS % 1000)))"
  # The power cut: freeze everything above LazyFS, drop its unsynced pages, then kill.
  for p in "${WRITER_PIDS[@]}"; do kill -STOP "$p" 2>/dev/null || true; done
  kill -STOP "$MOUNT_PID"
  clear_cache
  kill -9 "$MOUNT_PID"; wait "$MOUNT_PID" 2>/dev/null || true; MOUNT_PID=""
  fusermount -uz "$MNT" 2>/dev/null || true
  kill_writers
  STORE_MIB=$(( $(du -sk "$LZROOT/store" | cut -f1) / 1024 ))
  if mount_store "$RD/mount2.log"; then
    REMOUNT_MS=$MOUNT_MS
    python3 "$HERE/check.py" "${CHECKS[@]}" > "$RD/check.out" 2>&1 || echo "checker failed" >> "$RD/check.out"
    read -r LOST BAD FILES ACKED DROPPED < <(head -1 "$RD/check.out") || true
    [[ "$LOST $BAD $FILES $ACKED $DROPPED" =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]] || { LOST=-; BAD=-; FILES=-; ACKED=0; DROPPED=0; }
    stop_mount
  else
    REMOUNT_MS=-1; LOST=-; BAD=-; FILES=-; ACKED=0; DROPPED=0
    echo "round $round: remount FAILED:" >&2; cat "$RD/mount2.log" >&2
  fi
  if [ "$REMOUNT_MS" -lt 0 ] || [ "$LOST" != 0 ] || [ "$BAD" != 0 ]; then
    FAIL=1
    echo "round $round: problems (details in $RD):" >&2; tail -n +2 "$RD/check.out" >&2 || true
  fi
  LINE=$(printf '%5s %8s %9s %6s %9s %11s %7s %10s %10s' "$round" "$DELAY_MS" "$STORE_MIB" "$FILES" "$((ACKED >> 20))" "$((DROPPED >> 20))" "$LOST" "$BAD" "$REMOUNT_MS")
  RESULTS+=("$LINE")
  echo "$LINE"
done

# The rm -rf rounds: the cut while rm runs and the reclaimer deletes shards.
RM_RESULTS=()
RM_PID=""
for round in $(seq 1 "$RM_ROUNDS"); do
  RD="$WORK/rm$round"
  fresh_round "$RD"
  python3 "$HERE/tree.py" make "$MNT/tree" "$RM_FILES"
  rm -rf "$MNT/tree" & RM_PID=$!
  DELAY_MS=$(( RM_MIN_MS + (RANDOM * 32768 + RANDOM) % (RM_MAX_MS - RM_MIN_MS + 1) ))
  sleep "$(printf '%d.%03d' $((DELAY_MS / 1000)) $((DELAY_MS % 1000)))"
  kill -STOP "$RM_PID" 2>/dev/null || true
  kill -STOP "$MOUNT_PID"
  clear_cache
  kill -9 "$MOUNT_PID"; wait "$MOUNT_PID" 2>/dev/null || true; MOUNT_PID=""
  fusermount -uz "$MNT" 2>/dev/null || true
  kill -9 "$RM_PID" 2>/dev/null || true; wait "$RM_PID" 2>/dev/null || true; RM_PID=""
  if mount_store "$RD/mount2.log"; then
    python3 "$HERE/tree.py" check "$MNT/tree" "$RM_FILES" > "$RD/check.out" 2>&1 || echo "checker failed" >> "$RD/check.out"
    read -r PRESENT MISSING BAD < <(head -1 "$RD/check.out") || true
    [[ "$PRESENT $MISSING $BAD" =~ ^[0-9]+\ [0-9]+\ [0-9]+$ ]] || { PRESENT=-; MISSING=-; BAD=-; }
    stop_mount
  else
    PRESENT=-; MISSING=-; BAD=-
    echo "rm round $round: remount FAILED:" >&2; cat "$RD/mount2.log" >&2
  fi
  if [ "$BAD" != 0 ]; then
    FAIL=1
    echo "rm round $round: files back without their bytes (details in $RD):" >&2; tail -n +2 "$RD/check.out" >&2 || true
  fi
  LINE=$(printf '%5s %8s %7s %8s %8s %5s' "$round" "$DELAY_MS" "$RM_FILES" "$PRESENT" "$MISSING" "$BAD")
  RM_RESULTS+=("$LINE")
  echo "rm $LINE"
done

echo
echo "power-loss campaign: $ROUNDS rounds, each with replica:3 and ec:4+2 writers (work dir $WORK)"
printf '%5s %8s %9s %6s %9s %11s %7s %10s %10s\n' round cut_ms store_MiB files fsync_MiB dropped_MiB lost_B non_prefix remount_ms
for l in "${RESULTS[@]}"; do echo "$l"; done
if [ "$RM_ROUNDS" -gt 0 ]; then
  echo
  echo "rm -rf rounds: back = files the cut brought back (their unlink was lost); bad = back but unreadable (must be 0)"
  printf '%5s %8s %7s %8s %8s %5s\n' round cut_ms files back gone bad
  for l in "${RM_RESULTS[@]}"; do echo "$l"; done
fi
exit $FAIL
