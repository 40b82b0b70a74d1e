#!/usr/bin/env bash
# fio benchmark: the same workloads, in the same run, on
#   plain      a plain directory (the baseline every ratio is against)
#   bindfs     a bindfs mount (C passthrough: the FUSE ceiling)
#   gocryptfs  a gocryptfs mount (per-block authenticated RMW: the nearest peer)
#   passthru   scripts/passthrough.js (fuse-native passthrough: the ceiling of that binding; not run
#              unless named in TARGETS)
#   cfs3-r3    chunkfs on the libfuse3 transport (the default), replica:3
#   cfs3-ec42  chunkfs on the libfuse3 transport, ec:4+2
#   cfsn-r3    chunkfs on fuse-native (libfuse 2, -o transport=fuse-native), replica:3
#   cfsn-ec42  chunkfs on fuse-native, ec:4+2
#   cfs3wb-r3, cfs3wb-ec42  chunkfs on libfuse3 with -o writeback_cache (the kernel caches written pages)
# Workloads: sequential 1 MiB write and read; random 4 KiB write with 1 and 4 jobs; random 4 KiB read;
# random 4 KiB write with fsync after each write. Caches are dropped before each job and the targets are
# interleaved over ROUNDS rounds (the machine is shared and noisy); the median of the rounds is reported.
# Usage (as root): scripts/bench-fio.sh   env: ROUNDS=2 RUNTIME_S=8 SIZE_MB=256 BENCH_DIR=/var/tmp/chunkfs-bench
#                  TARGETS="plain bindfs gocryptfs cfs3-r3 cfs3-ec42 cfsn-r3 cfsn-ec42" WORKLOADS="seqwrite seqread ..."
#                  CHUNKFS_MOUNT_OPTS="buffer_mb=256" (chunkfs mount -o options, every chunkfs target)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

ROUNDS=${ROUNDS:-2}
RUNTIME_S=${RUNTIME_S:-8}
SIZE_MB=${SIZE_MB:-256}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench}
TARGETS=${TARGETS:-"plain bindfs gocryptfs cfs3-r3 cfs3-ec42 cfsn-r3 cfsn-ec42"}
WORKLOADS=${WORKLOADS:-"seqwrite seqread randwrite1 randwrite4 randread fsyncwrite"}
RESULTS=$BENCH_DIR/results.tsv

need=()
for tool in fio:fio bindfs:bindfs gocryptfs:gocryptfs fusermount:fuse; do
  command -v "${tool%%:*}" >/dev/null || need+=("${tool#*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "bench-fio: missing ${need[*]}; run as root or apt-get install them" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -f dist/src/cli.js ] || npx tsc -p tsconfig.json

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
  echo "bench-fio: timed out waiting for '$pattern' in $log:" >&2; cat "$log" >&2; return 1
}

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
}

for m in "$BENCH_DIR"/*/mnt; do [ -d "$m" ] && fusermount -uz "$m" 2>/dev/null || true; done
rm -rf --one-file-system "$BENCH_DIR" # never descend into a mount left behind
mkdir -p "$BENCH_DIR"
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
    cfs3-r3|cfs3-ec42|cfs3wb-r3|cfs3wb-ec42|cfsn-r3|cfsn-ec42)
      local layout=replica:3; [ "${t#*-}" = ec42 ] && layout=ec:4+2
      local opts
      case ${t%%-*} in
        cfs3) opts=transport=fuse3,nowriteback_cache ;;
        cfs3wb) opts=transport=fuse3,writeback_cache ;;
        cfsn) opts=transport=fuse-native ;;
      esac
      node dist/src/cli.js mkfs "$base/store" --disks 6 --layout "$layout" >/dev/null
      node dist/src/cli.js mount "$base/store" "$base/mnt" -o "$opts" ${CHUNKFS_MOUNT_OPTS:+-o "$CHUNKFS_MOUNT_OPTS"} >"$base/log" 2>&1 &
      PIDS+=($!); MOUNTS+=("$base/mnt"); wait_line "$base/log" "chunkfs: mounted"; DIR[$t]=$base/mnt ;;
    *) echo "bench-fio: unknown target $t" >&2; exit 1 ;;
  esac
}

ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-fio: target $t unavailable, skipped" >&2; fi
done

# fio arguments per workload; the metric is IOPS (4 KiB) or MiB/s (1 MiB).
fio_args() {
  local common=(--ioengine=psync --fallocate=none --direct=0 --time_based --runtime="$RUNTIME_S" --group_reporting --output-format=json)
  case $1 in
    seqwrite)   echo "${common[*]} --rw=write --bs=1M --size=${SIZE_MB}M --end_fsync=1 --filename=seq.dat" ;;
    seqread)    echo "${common[*]} --rw=read --bs=1M --size=${SIZE_MB}M --filename=seq.dat" ;;
    randwrite1) echo "${common[*]} --rw=randwrite --bs=4k --size=${SIZE_MB}M --filename=rand.dat" ;;
    randwrite4) echo "${common[*]} --rw=randwrite --bs=4k --size=$((SIZE_MB / 4))M --numjobs=4" ;;
    randread)   echo "${common[*]} --rw=randread --bs=4k --size=${SIZE_MB}M --filename=rand.dat" ;;
    fsyncwrite) echo "${common[*]} --rw=randwrite --bs=4k --size=${SIZE_MB}M --fsync=1 --filename=rand.dat" ;;
  esac
}
metric() { case $1 in seqwrite|seqread) echo bw ;; *) echo iops ;; esac; }

# Lay out the files the read workloads need, once per target (not measured).
for t in "${ACTIVE[@]}"; do
  (cd "${DIR[$t]}" && fio --name=layout --rw=write --bs=1M --size=${SIZE_MB}M --filename=seq.dat --fallocate=none --end_fsync=1 >/dev/null \
    && fio --name=layout --rw=write --bs=1M --size=${SIZE_MB}M --filename=rand.dat --fallocate=none --end_fsync=1 >/dev/null)
done

: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  for w in $WORKLOADS; do
    for t in "${ACTIVE[@]}"; do
      drop_caches
      # shellcheck disable=SC2046
      json=$(cd "${DIR[$t]}" && fio --name="$w" $(fio_args "$w") 2>/dev/null) || { echo "bench-fio: fio $w on $t failed" >&2; continue; }
      value=$(printf '%s' "$json" | node -e '
        let s = ""; process.stdin.on("data", (d) => { s += d }).on("end", () => {
          const j = JSON.parse(s.slice(s.indexOf("{"))).jobs[0]; const m = process.argv[1]
          const side = j.write.io_bytes > 0 ? j.write : j.read
          console.log(m === "bw" ? (side.bw / 1024).toFixed(1) : side.iops.toFixed(0)) })' "$(metric "$w")")
      printf '%s\t%s\t%s\t%s\n' "$round" "$w" "$t" "$value" >> "$RESULTS"
      printf 'round %s  %-10s %-10s %s\n' "$round" "$w" "$t" "$value" >&2
    done
  done
done

# Table: median over rounds; each target as a ratio to the plain directory; chunkfs also vs gocryptfs.
node - "$RESULTS" "${ACTIVE[*]}" "$WORKLOADS" <<'EOF'
const fs = require('fs')
const [file, targetList, workloadList] = process.argv.slice(2)
const targets = targetList.split(' ').filter(Boolean)
const workloads = workloadList.split(' ').filter(Boolean)
const vals = {}
for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  const [, w, t, v] = line.split('\t'); (vals[w + ' ' + t] ??= []).push(Number(v))
}
const median = (a) => { if (!a || !a.length) return NaN; const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const unit = (w) => (w.startsWith('seq') ? 'MiB/s' : 'IOPS')
const pad = (s, n) => String(s).padEnd(n)
let out = pad('workload', 20) + targets.map((t) => pad(t, 20)).join('') + '\n'
for (const w of workloads) {
  const base = median(vals[w + ' plain'])
  out += pad(`${w} ${unit(w)}`, 20)
  const fmt = (v) => (w.startsWith('seq') ? v.toFixed(1) : String(Math.round(v)))
  out += targets.map((t) => { const v = median(vals[w + ' ' + t]); return pad(isNaN(v) ? 'n/a' : `${fmt(v)} (${(v / base).toFixed(2)}x)`, 20) }).join('') + '\n'
}
console.log(`\nfio, median of rounds; (x) = ratio to the plain directory\n${out}`)
if (targets.includes('gocryptfs')) {
  for (const t of targets.filter((x) => x.startsWith('cfs'))) {
    console.log(`${t} vs gocryptfs: ` + workloads.map((w) => `${w} ${(median(vals[w + ' ' + t]) / median(vals[w + ' gocryptfs'])).toFixed(2)}x`).join(', '))
  }
}
EOF
