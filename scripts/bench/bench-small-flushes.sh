#!/usr/bin/env bash
# Device flushes of a mount for a small-file workload without any fsync (DESIGN §5 small files): FILES
# files each created, written (3,000 bytes), renamed and unlinked, then DIRS mkdir/rmdir pairs, as
# a build tree's temporary files do. Counts fsync + fdatasync calls of the mount process with
# strace, from mount to unmount (so the flushes of the background applier and of unmount count too).
# Exact counts, not timings: the same on a busy or an idle machine. A local file system spends none.
# Usage: scripts/bench/bench-small-flushes.sh   env: FILES=300 DIRS=50 BASELINE_REPO=/path/to/older/checkout
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${FILES:-300}
DIRS=${DIRS:-50}
command -v strace >/dev/null || { echo "bench-small-flushes: needs strace (apt-get install strace)" >&2; exit 1; }
[ -f dist/cli/cli.js ] || npx tsc -p tsconfig.json
work=$(mktemp -d /var/tmp/chunkfs-small-flushes-XXXXXX)
cleanup() { for m in "$work"/*/mnt; do mountpoint -q "$m" 2>/dev/null && fusermount3 -uz "$m"; done; rm -rf "$work"; }
trap cleanup EXIT

# Flushes of one mount of repo's build over the workload.
flushes() {
  local repo=$1 dir
  dir=$(mktemp -d "$work/r-XXXXXX")
  node "$repo/dist/cli/cli.js" mkfs "$dir/store" --disks 3 --layout replica:3 >/dev/null
  mkdir "$dir/mnt"
  strace -f -qq -c -U name,calls -e trace=fsync,fdatasync -o "$dir/trace" \
    node "$repo/dist/cli/cli.js" mount "$dir/store" "$dir/mnt" >"$dir/log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do mountpoint -q "$dir/mnt" && break; sleep 0.1; done
  mountpoint -q "$dir/mnt" || { echo "bench-small-flushes: $repo did not mount: $(cat "$dir/log")" >&2; exit 1; }
  python3 - "$dir/mnt" "$FILES" "$DIRS" <<'PY'
import os, sys
m, files, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(3000)
for i in range(files):
    p = f'{m}/f{i}'
    with open(p, 'wb') as f:
        f.write(data)
    os.rename(p, p + '.r')
    os.unlink(p + '.r')
for i in range(dirs):
    os.mkdir(f'{m}/d{i}')
    os.rmdir(f'{m}/d{i}')
PY
  sleep 2 # the applier's and the commit timer's rounds
  fusermount3 -u "$dir/mnt"
  wait "$pid" || true
  awk '$1 == "fsync" || $1 == "fdatasync" { s += $2 } END { print s + 0 }' "$dir/trace"
}

printf '%-10s %s\n' build flushes
[ -n "${BASELINE_REPO:-}" ] && printf '%-10s %s\n' before "$(flushes "$BASELINE_REPO")"
printf '%-10s %s\n' after "$(flushes .)"
