# Benchmark targets shared by bench-fio.sh and bench-smallfiles.sh (sourced; needs BENCH_DIR and
# BENCH_NAME): each target is a directory to run a workload in, mounted here and unmounted on exit.
#   plain      a plain directory (the baseline)
#   bindfs     a bindfs mount (C passthrough: the FUSE ceiling)
#   gocryptfs  a gocryptfs mount (per-block authenticated RMW: the nearest peer)
#   passthru   scripts/bench/passthrough.js (a fuse-native passthrough: that binding's ceiling)
#   pthp       libfuse's example/passthrough_hp.cc (C++, low-level API, multithreaded: the ceiling of
#              FUSE on this kernel), given as PASSTHROUGH_HP=/path/to/binary; skipped without it.
#              Build it yourself in a scratch folder (not in this repository): libfuse tag
#              fuse-3.14.0, g++ -O2 -std=c++17 example/passthrough_hp.cc $(pkg-config --cflags --libs fuse3)
#   cfs3-r3, cfs3-ec42      chunkfs on the libfuse3 transport (the default), replica:3 / ec:4+2
#   cfs3wb-r3, cfs3wb-ec42  the same with -o writeback_cache (the kernel caches written pages)
#   cfs3t-r3, cfs3t-ec42    the same with -o dispatch=threads (libfuse's threads read the requests), a mode
#                           removed since (native/fuse3/session.h): chunkfs as built in $BASELINE_REPO, a
#                           checkout from before the removal (e.g. cf02b38)
#   cfs3ns-r3, cfs3ns-ec42  the same with -o spin_us=0 (the JS thread sleeps as soon as it is idle)
#   cfsn-r3, cfsn-ec42      chunkfs on fuse-native (libfuse 2, -o transport=fuse-native)
#   cfs-r3, cfs-ec42        chunkfs with the default options (whatever transport is the default)
#   base-r3, base-ec42      chunkfs built in $BASELINE_REPO (an older checkout), default options, for
#                           before/after in one run
#   any chunkfs target + transforms (DESIGN §10): cfs3-r3-zstd, cfs3-ec42-lz4, cfs3-r3-aes, cfs3-ec42-zstd-aes
#                           (zstd, lz4, aes = aes256gcm, appended to the layout in that order)
#   any chunkfs target + -pg or -pgnet (DESIGN §9): its metadata in PostgreSQL (scripts/bench/bench-pg.sh: one
#                           throwaway cluster per run), over a Unix socket (-pg) or over loopback TCP with
#                           0.5 ms added per round trip (-pgnet); e.g. cfs-r3-pg, cfs-r3-pgnet, base-r3-pg
# CHUNKFS_MOUNT_OPTS: more -o options for every chunkfs target.
# BENCH_ALLOW_OTHER=1: gocryptfs lets other users in (-allow_other, which also checks modes); chunkfs
#                      does when run as root. For a workload run as another user (bench-pgbench.sh).

# Tools the targets need (the FUSE ones, and the benchmark's own tool: bench_prepare TOOL:PACKAGE).
bench_prepare() {
  local need=() tool
  for tool in "$@" bindfs:bindfs gocryptfs:gocryptfs fusermount3:fuse3; do
    [[ $tool == *:* ]] || tool=$tool:$tool
    command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
  done
  if [ "${#need[@]}" -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "$BENCH_NAME: missing ${need[*]}; run as root or apt-get install them" >&2; exit 1; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  [ -f dist/cli/cli.js ] || npx tsc -p tsconfig.json
  for m in "$BENCH_DIR"/*/mnt; do [ -d "$m" ] && fusermount -uz "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$BENCH_DIR" # never descend into a mount left behind
  mkdir -p "$BENCH_DIR"
}

# shellcheck source=scripts/bench/bench-pg.sh
source scripts/bench/bench-pg.sh

PIDS=()
MOUNTS=()
cleanup() {
  for m in "${MOUNTS[@]}"; do fusermount -uz "$m" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pg_bench_stop
  # The targets' files and stores (GiBs after a fio run; a day of runs filled this machine's disk):
  # gone unless BENCH_KEEP=1. results.tsv stays.
  if [ "${BENCH_KEEP:-0}" != 1 ]; then
    for t in "${!DIR[@]}"; do rm -rf --one-file-system "${BENCH_DIR:?}/$t" 2>/dev/null || true; done
  fi
}
trap cleanup EXIT
# A signal ends the run (through the EXIT trap): a handler that returned would let the run go on.
trap 'exit 130' INT TERM

# Wait for a line in a log file (a mount's ready line), up to 60 s.
wait_line() {
  local log=$1 pattern=$2 i
  for i in $(seq 1 600); do
    grep -q "$pattern" "$log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$BENCH_NAME: timed out waiting for '$pattern' in $log:" >&2; cat "$log" >&2; return 1
}

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

# The targets in the order round $1 runs them: as given on odd rounds, reversed on even ones, so that an
# A/B does not always give one target the same place in the sequence (the load a round meets drifts, and
# what ran just before leaves the disk and the page cache busy). Sets ORDER.
round_order() {
  ORDER=("${ACTIVE[@]}")
  if (( $1 % 2 == 0 )); then mapfile -t ORDER < <(printf '%s\n' "${ACTIVE[@]}" | tac); fi
}

declare -A DIR
# The serving process of targets this script starts (node mounts, passthrough_hp), for CPU time.
declare -A PID

# Peak resident memory (VmHWM) of target t's mount process, in MiB; empty when it has none.
peak_rss() {
  local pid=${PID[$1]:-}
  [ -n "$pid" ] && [ -r "/proc/$pid/status" ] && awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status"
}

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
      gocryptfs -q -nosyslog ${BENCH_ALLOW_OTHER:+-allow_other} -extpass "echo bench" "$base/cipher" "$base/mnt"
      MOUNTS+=("$base/mnt"); DIR[$t]=$base/mnt ;;
    passthru)
      mkdir -p "$base/src"
      node scripts/bench/passthrough.js "$base/src" "$base/mnt" >"$base/log" 2>&1 &
      PIDS+=($!); PID[$t]=$!; MOUNTS+=("$base/mnt"); wait_line "$base/log" "mounted" || return 1; DIR[$t]=$base/mnt ;;
    pthp)
      [ -x "${PASSTHROUGH_HP:-}" ] || { echo "$BENCH_NAME: pthp needs PASSTHROUGH_HP=/path/to/passthrough_hp" >&2; return 1; }
      mkdir -p "$base/src"; "$PASSTHROUGH_HP" "$base/src" "$base/mnt"; MOUNTS+=("$base/mnt"); DIR[$t]=$base/mnt ;;
    cfs-r3*|cfs-ec42*|cfs3-r3*|cfs3-ec42*|cfs3wb-r3*|cfs3wb-ec42*|cfs3t-r3*|cfs3t-ec42*|cfs3ns-r3*|cfs3ns-ec42*|cfsn-r3*|cfsn-ec42*|base-r3*|base-ec42*)
      local rest=${t#*-} layout=replica:3 tr meta=() notxg=0
      [ "${rest%%-*}" = ec42 ] && layout=ec:4+2
      # Transforms after the placement: cfs3-ec42-zstd-aes -> ec:4+2,zstd,aes256gcm.
      if [ "$rest" != "${rest%%-*}" ]; then
        local trs=()
        IFS=- read -ra trs <<< "${rest#*-}"
        for tr in "${trs[@]}"; do
          case $tr in
            zstd|lz4) layout=$layout,$tr ;;
            aes) layout=$layout,aes256gcm ;;
            notxg) notxg=1 ;;
            pg|pgnet) pg_bench_url "$tr" "bench_${t//-/_}" || return 1; meta=(--meta "$PG_URL") ;;
            *) echo "$BENCH_NAME: unknown transform $tr in $t" >&2; return 1 ;;
          esac
        done
      fi
      local opts=() cli=dist/cli/cli.js
      case ${t%%-*} in
        cfs3) opts=(-o transport=fuse3,nowriteback_cache) ;;
        cfs3wb) opts=(-o transport=fuse3,writeback_cache) ;;
        cfs3t)
          [ -n "${BASELINE_REPO:-}" ] || { echo "$BENCH_NAME: $t needs BASELINE_REPO (a build with -o dispatch)" >&2; return 1; }
          cli=$BASELINE_REPO/dist/cli/cli.js
          opts=(-o transport=fuse3,nowriteback_cache,dispatch=threads) ;;
        cfs3ns) opts=(-o transport=fuse3,nowriteback_cache,spin_us=0) ;;
        cfsn) opts=(-o transport=fuse-native) ;;
        base)
          [ -n "${BASELINE_REPO:-}" ] || { echo "$BENCH_NAME: $t needs BASELINE_REPO" >&2; return 1; }
          cli=$BASELINE_REPO/dist/cli/cli.js  # builds before the move to cli/ have dist/src/cli.js
          [ -f "$cli" ] || cli=$BASELINE_REPO/dist/src/cli.js ;;
      esac
      node "$cli" mkfs "$base/store" --disks 6 --layout "$layout" "${meta[@]}" >/dev/null
      # notxg: transaction groups off (chunkfs.json defaults.transactionGroups, DESIGN §5), for A/B runs.
      if [ "$notxg" = 1 ]; then node -e 'const f=process.argv[1],fs=require("fs"),j=JSON.parse(fs.readFileSync(f));
        j.defaults={...j.defaults,transactionGroups:false};fs.writeFileSync(f,JSON.stringify(j,null,2))' "$base/store/chunkfs.json"; fi
      node "$cli" mount "$base/store" "$base/mnt" "${opts[@]}" ${CHUNKFS_MOUNT_OPTS:+-o "$CHUNKFS_MOUNT_OPTS"} >"$base/log" 2>&1 &
      PIDS+=($!); PID[$t]=$!; MOUNTS+=("$base/mnt"); wait_line "$base/log" "chunkfs: mounted" || return 1; DIR[$t]=$base/mnt ;;
    *) echo "$BENCH_NAME: unknown target $t" >&2; exit 1 ;;
  esac
}

