#!/usr/bin/env bash
# Runs xfstests (fstests) against this checkout through the mount(8) helper
# (docs/xfstests.md): two fresh stores as TEST_DEV and SCRATCH_DEV, FSTYP=fuse with
# FUSE_SUBTYP=.chunkfs, one ./check per test so each test gets its own timeout and a fresh
# scratch store. Builds nothing: XFSTESTS_DIR points at an xfstests tree you built yourself,
# whose common/rc _fs_type knows fuse.chunkfs (docs/xfstests.md says how). Needs root.
#
#   XFSTESTS_DIR=/path/to/xfstests scripts/test/xfstests.sh                 # the quick group of generic/
#   XFSTESTS_DIR=... scripts/test/xfstests.sh generic/451 generic/634 auto  # tests and group names
#
# Environment: XFSTESTS_DIR (required); XFSTESTS_WORK (stores, mount points and logs; default a
# new directory under /tmp); XFSTESTS_TABLE (the result table; default $XFSTESTS_WORK/results.tsv);
# XFSTESTS_TIMEOUT_S (per test, default 180); XFSTESTS_BUDGET_S (stop starting tests after this
# many seconds, default none); XFSTESTS_DISKS (disks per store, default 3); XFSTESTS_MOUNT_OPTS
# (extra -o options for both mounts, e.g. writeback_cache).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
xfs=${XFSTESTS_DIR:?set XFSTESTS_DIR to a built xfstests tree}
timeout_s=${XFSTESTS_TIMEOUT_S:-180}
budget_s=${XFSTESTS_BUDGET_S:-0}
disks=${XFSTESTS_DISKS:-3}
work=${XFSTESTS_WORK:-$(mktemp -d /tmp/chunkfs-xfstests-XXXXXX)}
table=${XFSTESTS_TABLE:-$work/results.tsv}
tests_max=2000  # a named limit on the test loop (generic/ has about 800 tests)
kill_grace_s=20

die() { echo "xfstests.sh: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (mount(8), and xfstests itself)"
[ -x "$xfs/check" ] && [ -x "$xfs/ltp/fsx" ] || die "$xfs is not a built xfstests tree (no check or ltp/fsx)"
grep -q 'fuse\.chunkfs/fuse' "$xfs/common/rc" || die "$xfs/common/rc: _fs_type does not map fuse.chunkfs to fuse; see docs/xfstests.md"
grep -q 'findmnt -n -o TARGET -S' "$xfs/common/rc" || die "$xfs/common/rc: _unmount cannot unmount a store by its directory; see docs/xfstests.md"
[ -x /sbin/mount.fuse.chunkfs ] || die "no /sbin/mount.fuse.chunkfs: run scripts/install-mount-helper.sh"
[ -f "$repo/dist/cli/mount-helper.js" ] || die "not built: run npx tsc -p tsconfig.json"

mkdir -p "$work" || die "cannot make $work"
test_dev=$work/test-store; scratch_dev=$work/scratch-store
test_dir=$work/test-mnt; scratch_mnt=$work/scratch-mnt
results=$work/results; logs=$work/logs
mkdir -p "$test_dir" "$scratch_mnt" "$results" "$logs"
# The installed helper runs CHUNKFS_HOME's build: this checkout's.
export CHUNKFS_HOME=$repo

unmount_all() {
  local m
  for m in "$scratch_mnt" "$test_dir"; do
    if grep -q " $m " /proc/mounts; then umount "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || umount -l "$m"; fi
  done
}
# The mount process lets go of its store a moment after umount (docs/operations.md); wait for it.
wait_store_free() {
  local i
  for ((i = 0; i < 300; i++)); do
    pgrep -f -- "mount $1 " >/dev/null || return 0
    sleep 0.1
  done
  echo "xfstests.sh: the mount process of $1 is still running" >&2
}
cleanup() { unmount_all; wait_store_free "$test_dev"; wait_store_free "$scratch_dev"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

mkstore() {
  rm -rf "$1"
  node "$repo/bin/chunkfs" mkfs "$1" --disks "$disks" >>"$logs/mkfs.log" 2>&1 || die "mkfs $1 failed (see $logs/mkfs.log)"
}

# Test names from the arguments: dir/NNN as they are, anything else a group of generic/.
expand() {
  local a
  for a in "$@"; do
    if [[ $a == */* ]]; then echo "$a"
    else awk -v g="$a" '/^[0-9]/ { for (i = 2; i <= NF; i++) if ($i == g) print "generic/" $1 }' "$xfs/tests/generic/group.list"
    fi
  done
}
[ $# -gt 0 ] || set -- quick
mapfile -t tests < <(expand "$@" | awk '!seen[$0]++' | head -n "$tests_max")
[ ${#tests[@]} -gt 0 ] || die "no tests in: $*"

opts=${XFSTESTS_MOUNT_OPTS:+-o $XFSTESTS_MOUNT_OPTS}
cat >"$xfs/local.config" <<EOF
# written by $repo/scripts/test/xfstests.sh
export FSTYP=fuse
export FUSE_SUBTYP=.chunkfs
export TEST_DEV=$test_dev
export TEST_DIR=$test_dir
export SCRATCH_DEV=$scratch_dev
export SCRATCH_MNT=$scratch_mnt
export TEST_FS_MOUNT_OPTS="$opts"
export MOUNT_OPTIONS="$opts"
export RESULT_BASE=$results
EOF

mkstore "$test_dev"
printf 'test\tresult\tseconds\tnote\n' >"$table"
start_s=$SECONDS
for t in "${tests[@]}"; do
  if [ "$budget_s" -gt 0 ] && [ $((SECONDS - start_s)) -ge "$budget_s" ]; then echo "budget of ${budget_s}s spent; stopping before $t"; break; fi
  unmount_all; wait_store_free "$scratch_dev"
  mkstore "$scratch_dev"  # xfstests makes no file system for FSTYP=fuse: a fresh store per test
  rm -f "$results/$t".*
  t0=$SECONDS
  (cd "$xfs" && timeout -k "$kill_grace_s" "$timeout_s" ./check "$t") >"$logs/${t//\//-}.log" 2>&1
  rc=$?
  secs=$((SECONDS - t0)); note=
  if [ $rc = 124 ] || [ $rc = 137 ]; then result=timeout; note="no result after ${timeout_s}s"
  elif [ -f "$results/$t.notrun" ]; then result=notrun; note=$(head -c 200 "$results/$t.notrun" | tr '\t\n' '  ')
  elif grep -q '^Passed all 1 tests' "$logs/${t//\//-}.log"; then result=pass
  else result=fail; note=$(grep -m1 -E 'output mismatch|_check_|failed|\[failed' "$logs/${t//\//-}.log" | head -c 200 | tr '\t' ' ')
  fi
  printf '%s\t%s\t%s\t%s\n' "$t" "$result" "$secs" "$note" | tee -a "$table"
done
echo "table: $table"
awk -F'\t' 'NR > 1 { n++; c[$2]++ } END { printf "ran %d: pass %d, fail %d, notrun %d, timeout %d\n", n, c["pass"], c["fail"], c["notrun"], c["timeout"] }' "$table"
