#!/usr/bin/env bash
# Per committed transaction of one pgbench run (PostgreSQL 15, data directory on each target of
# scripts/bench/bench-targets.sh): FUSE requests by opcode with their latency (tracefs
# fuse_request_send/fuse_request_end of the target's connection) and the WRITE sizes, the serving
# process's CPU (utime + stime), and with STRACE=1 its writes and flushes by file (strace -f -y: the
# intent log, meta.db, shard files). Counts, not throughput: they hold on a busy machine.
# Usage (as root): scripts/bench/pgbench-counts.sh   env: TARGETS="gocryptfs cfs3-r3" TX=1000 (per
#                  client) CLIENTS=4 THREADS=2 SCALE=10 STRACE=0 BENCH_DIR=/var/tmp/chunkfs-pgbench-counts
set -euo pipefail
cd "$(dirname "$0")/../.."

TARGETS=${TARGETS:-"gocryptfs cfs3-r3"}
TX=${TX:-1000}
CLIENTS=${CLIENTS:-4}
THREADS=${THREADS:-2}
SCALE=${SCALE:-10}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-pgbench-counts}
PGB_BIN=${CHUNKFS_PG_BIN:-/usr/lib/postgresql/15/bin}
TRACE=/sys/kernel/tracing
export BENCH_ALLOW_OTHER=1 # gocryptfs: let the postgres user in
BENCH_NAME=pgbench-counts
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
[ "$(id -u)" -eq 0 ] || { echo "pgbench-counts: run as root (mounts, tracefs, runuser)" >&2; exit 1; }
[ -d "$TRACE/events/fuse" ] || mount -t tracefs nodev "$TRACE"

SOCK=$(mktemp -d /tmp/cfspgc-XXXXXX) # short: a socket path must fit in 107 bytes
chown postgres:postgres "$SOCK"
INST=$TRACE/instances/pgbench-counts-$$
pg_as() { (cd / && runuser -u postgres -- "$@"); }
pg_ctl_on() { pg_as "$PGB_BIN/pg_ctl" -D "$1" -l "$SOCK/log" -w -t 120 "${@:2}" >/dev/null; }
stop_all() {
  for d in "$BENCH_DIR"/*/mnt/pgdata; do
    [ -f "$d/postmaster.pid" ] && pg_ctl_on "$d" -m immediate stop 2>/dev/null || true
  done
  [ -d "$INST" ] && { echo 0 >"$INST/events/fuse/enable"; rmdir "$INST"; }
  rm -rf "$SOCK"
}
trap 'stop_all; cleanup' EXIT

# Requests by opcode per transaction, their mean and median latency, WRITE sizes (tracefs lines).
summarize_trace() {
  python3 - "$1" "$2" <<'EOF'
import re, sys, collections
path, n = sys.argv[1], int(sys.argv[2])
sent, lat, sizes = {}, collections.defaultdict(list), collections.Counter()
EVENT = r' (\d+\.\d+): fuse_request_(send|end): connection \d+ req (\d+)(?: opcode \d+ \((\w+)\) len (\d+))?'
for line in open(path):
    m = re.search(EVENT, line)
    if not m: continue
    t, kind, req = float(m.group(1)), m.group(2), m.group(3)
    if kind == 'send':
        sent[req] = (t, m.group(4))
        if m.group(4) == 'FUSE_WRITE': sizes[(int(m.group(5)) - 80) // 1024] += 1  # 80: header + write_in
    elif req in sent:
        t0, op = sent.pop(req)
        lat[op].append((t - t0) * 1e6)
for op, v in sorted(lat.items()):
    v.sort()
    mean, median = sum(v) / len(v), v[len(v) // 2]
    print(f"  {op[5:]:10s} {len(v) / n:6.3f}/tx  latency mean {mean:6.0f} us, median {median:6.0f} us")
print('  WRITE sizes (KiB: count):', ', '.join(f'{k}: {c}' for k, c in sorted(sizes.items())))
EOF
}

# Writes and flushes of the serving process by file, per transaction (strace -y lines).
summarize_strace() {
  python3 - "$1" "$2" <<'EOF'
import re, sys, collections
path, n = sys.argv[1], int(sys.argv[2])
calls, size = collections.Counter(), collections.Counter()
for line in open(path):
    m = re.match(r'\d+ +(pwrite64|pwritev|writev|write|fdatasync|fsync)\(\d+<([^>]*)>.*= (\d+)', line)
    if not m: continue
    f = re.sub(r'\d+', '#', m.group(2))
    f = re.sub(r'/\.chunks/.*?(\.shard(\.tmp)?)?[^/]*$', lambda s: '/.chunks/*' + (s.group(1) or '/'), f)
    key = (m.group(1), f)
    calls[key] += 1
    if m.group(1) not in ('fdatasync', 'fsync'): size[key] += int(m.group(3))
for k in sorted(calls, key=lambda k: -calls[k])[:20]:
    print(f"  {calls[k] / n:7.3f}/tx {size[k] / n:8.0f} B/tx  {k[0]} {k[1]}")
EOF
}

bench_prepare
mkdir "$INST"
echo 65536 >"$INST/buffer_size_kb"
for t in $TARGETS; do
  setup_target "$t" || { echo "pgbench-counts: target $t unavailable, skipped" >&2; continue; }
  data=${DIR[$t]}/pgdata out=$BENCH_DIR/$t
  mkdir "$data" && chown postgres:postgres "$data" && chmod 0700 "$data"
  pg_as "$PGB_BIN/initdb" -D "$data" -A trust -U postgres --no-sync --locale=C --encoding=UTF8 >/dev/null
  pg_ctl_on "$data" -o "-c listen_addresses='' -c port=5481 -c unix_socket_directories=$SOCK" start
  pg_as "$PGB_BIN/pgbench" -h "$SOCK" -p 5481 -U postgres -i -q -s "$SCALE" postgres >/dev/null 2>&1
  pg_as "$PGB_BIN/psql" -h "$SOCK" -p 5481 -U postgres -qc checkpoint
  pid=${PID[$t]:-$(pgrep -n -f "gocryptfs .*$BENCH_DIR/$t/")}
  minor=$(mountpoint -d "${DIR[$t]}" | cut -d: -f2)
  for e in fuse_request_send fuse_request_end; do echo "connection == $minor" >"$INST/events/fuse/$e/filter"; done
  : >"$INST/trace"
  spid=
  if [ "${STRACE:-0}" = 1 ]; then
    strace -f -qq -y -e trace=pwrite64,pwritev,writev,write,fdatasync,fsync -p "$pid" -o "$out.strace" &
    spid=$!
    sleep 2
  fi
  cpu0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  echo 1 >"$INST/events/fuse/enable"
  res=$(pg_as "$PGB_BIN/pgbench" -h "$SOCK" -p 5481 -U postgres -c "$CLIENTS" -j "$THREADS" -t "$TX" postgres 2>&1)
  echo 0 >"$INST/events/fuse/enable"
  cpu1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  if [ -n "$spid" ]; then sleep 6; kill "$spid"; wait "$spid" || true; fi # the folds of the last group
  cp "$INST/trace" "$out.trace"
  pg_ctl_on "$data" -m fast stop
  n=$(printf '%s\n' "$res" | awk '/actually processed/ { split($NF, a, "/"); print a[1] }')
  tps=$(printf '%s\n' "$res" | awk '/^tps = / { printf "%.0f", $3 }')
  hz=$(getconf CLK_TCK)
  echo "$t: $n transactions, $tps TPS (load $(cut -d' ' -f1 /proc/loadavg)), serving process CPU" \
    "$(( (cpu1 - cpu0) * 1000000 / hz / n )) us per transaction${spid:+ (strace attached)}"
  summarize_trace "$out.trace" "$n"
  [ -z "$spid" ] || summarize_strace "$out.strace" "$n"
done
