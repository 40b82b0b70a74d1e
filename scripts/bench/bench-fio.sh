#!/usr/bin/env bash
# fio benchmark: the same workloads, in the same run, on the targets of scripts/bench/bench-targets.sh
# (plain directory = the baseline every ratio is against; gocryptfs = the peer chunkfs is compared to).
# Workloads: sequential 1 MiB write and read; random 4 KiB write with 1 and 4 jobs; random 4 KiB read;
# random 4 KiB write with fsync after each write, 1 job (fsyncwrite) and 4 jobs (fsyncwrite4, in the default
# list: its group commits). Caches are dropped before each job and the targets are
# interleaved over ROUNDS rounds (the machine is shared and noisy); the median of the rounds is reported.
# Usage (as root): scripts/bench/bench-fio.sh   env: ROUNDS=2 RUNTIME_S=8 SIZE_MB=256 BENCH_DIR=/var/tmp/chunkfs-bench BENCH_KEEP=1 (keep the files)
#                  TARGETS="plain bindfs gocryptfs cfs3-r3 cfs3-ec42 cfsn-r3 cfsn-ec42" WORKLOADS="seqwrite seqread ..."
#                  CHUNKFS_MOUNT_OPTS="buffer_mb=256" (chunkfs mount -o options, every chunkfs target)
#                  FIO_EXTRA="--buffer_compress_percentage=60 --refill_buffers" (e.g. data that compresses)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)

ROUNDS=${ROUNDS:-2}
RUNTIME_S=${RUNTIME_S:-8}
SIZE_MB=${SIZE_MB:-256}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench}
TARGETS=${TARGETS:-"plain bindfs gocryptfs cfs3-r3 cfs3-ec42 cfsn-r3 cfsn-ec42"}
WORKLOADS=${WORKLOADS:-"seqwrite seqread randwrite1 randwrite4 randread fsyncwrite fsyncwrite4"}
RESULTS=$BENCH_DIR/results.tsv

BENCH_NAME=bench-fio
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare fio
ACTIVE=()
for t in $TARGETS; do
  if setup_target "$t"; then ACTIVE+=("$t"); else echo "bench-fio: target $t unavailable, skipped" >&2; fi
done

# fio arguments per workload; the metric is IOPS (4 KiB) or MiB/s (1 MiB).
fio_args() {
  # shellcheck disable=SC2206
  local common=(--ioengine=psync --fallocate=none --direct=0 --time_based --runtime="$RUNTIME_S" --group_reporting --output-format=json ${FIO_EXTRA:-})
  case $1 in
    seqwrite)   echo "${common[*]} --rw=write --bs=1M --size=${SIZE_MB}M --end_fsync=1 --filename=seq.dat" ;;
    seqread)    echo "${common[*]} --rw=read --bs=1M --size=${SIZE_MB}M --filename=seq.dat" ;;
    randwrite1) echo "${common[*]} --rw=randwrite --bs=4k --size=${SIZE_MB}M --filename=rand.dat" ;;
    randwrite4) echo "${common[*]} --rw=randwrite --bs=4k --size=$((SIZE_MB / 4))M --numjobs=4" ;;
    randread)   echo "${common[*]} --rw=randread --bs=4k --size=${SIZE_MB}M --filename=rand.dat" ;;
    fsyncwrite) echo "${common[*]} --rw=randwrite --bs=4k --size=${SIZE_MB}M --fsync=1 --filename=rand.dat" ;;
    fsyncwrite4) echo "${common[*]} --rw=randwrite --bs=4k --size=$((SIZE_MB / 4))M --numjobs=4 --fsync=1" ;;
  esac
}
metric() { case $1 in seqwrite|seqread) echo bw ;; *) echo iops ;; esac; }

# Lay out the files the read workloads need, once per target (not measured). fsyncwrite4's four files
# (fio names them fsyncwrite4.N.0) too: it measures fsync'd overwrites like fsyncwrite, not writes into
# holes (a write into a hole of a sparse file stores a new chunk from its start, its zeros left as
# holes of the shard files).
for t in "${ACTIVE[@]}"; do
  (cd "${DIR[$t]}" && fio --name=layout --rw=write --bs=1M --size=${SIZE_MB}M --filename=seq.dat --fallocate=none --end_fsync=1 ${FIO_EXTRA:-} >/dev/null \
    && fio --name=layout --rw=write --bs=1M --size=${SIZE_MB}M --filename=rand.dat --fallocate=none --end_fsync=1 ${FIO_EXTRA:-} >/dev/null \
    && if [[ " $WORKLOADS " == *" fsyncwrite4 "* ]]; then
      fio --name=fsyncwrite4 --rw=write --bs=1M --size=$((SIZE_MB / 4))M --numjobs=4 --fallocate=none --end_fsync=1 ${FIO_EXTRA:-} >/dev/null
    fi)
done

: > "$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  round_order "$round"
  for w in $WORKLOADS; do
    for t in "${ORDER[@]}"; do
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

for t in "${ACTIVE[@]}"; do
  rss=$(peak_rss "$t" || true); if [ -n "$rss" ]; then echo "bench-fio: $t mount peak RSS $rss MiB" >&2; fi
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
  for (const t of targets.filter((x) => x.startsWith('cfs') || x.startsWith('base'))) {
    console.log(`${t} vs gocryptfs: ` + workloads.map((w) => `${w} ${(median(vals[w + ' ' + t]) / median(vals[w + ' gocryptfs'])).toFixed(2)}x`).join(', '))
  }
}
// PostgreSQL against SQLite (DESIGN §9 targets: >= 0.7x over the socket, >= 0.3x with 0.5 ms round trips).
for (const t of targets.filter((x) => /-pg(net)?$/.test(x))) {
  const s = t.replace(/-pg(net)?$/, '')
  if (targets.includes(s)) console.log(`${t} vs ${s}: ` + workloads.map((w) => `${w} ${(median(vals[w + ' ' + t]) / median(vals[w + ' ' + s])).toFixed(2)}x`).join(', '))
}
EOF
