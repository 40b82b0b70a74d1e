#!/usr/bin/env bash
# pgbench benchmark: PostgreSQL 15 with its data directory on each target of scripts/bench/bench-targets.sh,
# all in one run (plain directory = the baseline; gocryptfs = the peer chunkfs is compared to). Per target:
# initdb and `pgbench -i -s SCALE` once (not measured), then ROUNDS rounds interleaved across targets of
# `pgbench -c CLIENTS -j THREADS -T RUNTIME_S`; TPS per round, the median, ratios to plain and gocryptfs.
# A cluster runs only during its own target's turn (started, measured, stopped), so an idle one's
# checkpoints do not land in another target's measurement. initdb refuses root: the clusters run as the
# `postgres` user (runuser), listening on a Unix socket in a private directory only (no TCP).
# Usage (as root): scripts/bench/bench-pgbench.sh   env: ROUNDS=2 SCALE=10 CLIENTS=4 THREADS=2 RUNTIME_S=30
#                  TARGETS="plain gocryptfs cfs3-r3" (plus pthp when PASSTHROUGH_HP=/path/to/passthrough_hp)
#                  BENCH_DIR=/var/tmp/chunkfs-pgbench BENCH_KEEP=1 (keep the files) CHUNKFS_MOUNT_OPTS=...
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-2}
SCALE=${SCALE:-10}
CLIENTS=${CLIENTS:-4}
THREADS=${THREADS:-2}
RUNTIME_S=${RUNTIME_S:-30}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-pgbench}
TARGETS=${TARGETS:-"plain gocryptfs cfs3-r3${PASSTHROUGH_HP:+ pthp}"}
PGB_BIN=${CHUNKFS_PG_BIN:-/usr/lib/postgresql/15/bin}
PGB_PORT_BASE=${PGB_PORT_BASE:-5471} # names the socket file only (no TCP): one per target
RESULTS=$BENCH_DIR/results.tsv
export BENCH_ALLOW_OTHER=1 # gocryptfs: let the postgres user in

BENCH_NAME=bench-pgbench
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
[ "$(id -u)" -eq 0 ] || { echo "bench-pgbench: run as root (mounts, and runuser to postgres)" >&2; exit 1; }
[ -x "$PGB_BIN/pgbench" ] || { echo "bench-pgbench: $PGB_BIN/pgbench missing (apt-get install postgresql-15)" >&2; exit 1; }
id postgres >/dev/null 2>&1 || { echo "bench-pgbench: no postgres user (apt-get install postgresql-15)" >&2; exit 1; }

PGB_SOCK=$(mktemp -d /tmp/cfspgb-XXXXXX) # short: a socket path must fit in 107 bytes
chown postgres:postgres "$PGB_SOCK"
chmod 0700 "$PGB_SOCK"
declare -A PGDATA PGPORT

# As the postgres user, from / (the repository may be closed to it).
pgb_as() { (cd / && runuser -u postgres -- "$@"); }

pgb_start() {
  local t=$1
  pgb_as "$PGB_BIN/pg_ctl" -D "${PGDATA[$t]}" -l "$PGB_SOCK/$t.log" -w -t 120 \
    -o "-c listen_addresses='' -c port=${PGPORT[$t]} -c unix_socket_directories=$PGB_SOCK" start >/dev/null
}

pgb_stop() { pgb_as "$PGB_BIN/pg_ctl" -D "${PGDATA[$1]}" -m fast -w -t 120 stop >/dev/null; }

# Every cluster stopped (immediate; killed if pg_ctl cannot), before the targets are unmounted.
pgb_stop_all() {
  local t pid
  for t in "${!PGDATA[@]}"; do
    [ -f "${PGDATA[$t]}/postmaster.pid" ] || continue
    pid=$(head -1 "${PGDATA[$t]}/postmaster.pid" 2>/dev/null || true)
    pgb_as "$PGB_BIN/pg_ctl" -D "${PGDATA[$t]}" -m immediate -w -t 30 stop >/dev/null 2>&1 \
      || { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; } || true
  done
  rm -rf "$PGB_SOCK"
}
trap 'pgb_stop_all; cleanup' EXIT

# A data directory on target t, owned by postgres with mode 0700 (PostgreSQL refuses any other), and
# a cluster in it with the pgbench tables. Fails (target skipped) when the target cannot hold it.
pgb_prepare() {
  local t=$1 data=${DIR[$1]}/pgdata
  mkdir "$data" && chown postgres:postgres "$data" && chmod 0700 "$data" || return 1
  [ "$(stat -c '%U %a' "$data")" = "postgres 700" ] || { echo "bench-pgbench: $t: chown/chmod did not hold" >&2; return 1; }
  pgb_as test -w "$data" || { echo "bench-pgbench: $t: the postgres user cannot write $data" >&2; return 1; }
  PGDATA[$t]=$data
  pgb_as "$PGB_BIN/initdb" -D "$data" -A trust -U postgres --no-sync --locale=C --encoding=UTF8 >/dev/null || return 1
  pgb_start "$t" || return 1
  pgb_as "$PGB_BIN/pgbench" -h "$PGB_SOCK" -p "${PGPORT[$t]}" -U postgres -i -q -s "$SCALE" postgres \
    >"$BENCH_DIR/$t.init.log" 2>&1 || { cat "$BENCH_DIR/$t.init.log" >&2; return 1; }
  pgb_stop "$t"
}

bench_prepare
ACTIVE=()
port=$PGB_PORT_BASE
for t in $TARGETS; do
  PGPORT[$t]=$port
  port=$((port + 1))
  if setup_target "$t" && pgb_prepare "$t"; then ACTIVE+=("$t"); else echo "bench-pgbench: target $t unavailable, skipped" >&2; fi
done
[ "${#ACTIVE[@]}" -gt 0 ] || { echo "bench-pgbench: no target could be prepared" >&2; exit 1; }

: >"$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
  round_order "$round"
  for t in "${ORDER[@]}"; do
    drop_caches
    pgb_start "$t" || { echo "bench-pgbench: PostgreSQL did not start on $t (see $PGB_SOCK/$t.log)" >&2; continue; }
    out=$(pgb_as "$PGB_BIN/pgbench" -h "$PGB_SOCK" -p "${PGPORT[$t]}" -U postgres \
      -c "$CLIENTS" -j "$THREADS" -T "$RUNTIME_S" postgres 2>&1) || echo "bench-pgbench: pgbench on $t failed: $out" >&2
    pgb_stop "$t" || echo "bench-pgbench: PostgreSQL did not stop cleanly on $t" >&2
    tps=$(printf '%s\n' "$out" | awk '/^tps = / { printf "%.1f", $3; exit }')
    [ -n "$tps" ] || continue
    printf '%s\t%s\t%s\t%s\n' "$round" pgbench "$t" "$tps" >>"$RESULTS"
    printf 'round %s  %-10s %-10s %s\n' "$round" pgbench "$t" "$tps" >&2
  done
done

for t in "${ACTIVE[@]}"; do
  rss=$(peak_rss "$t" || true)
  if [ -n "$rss" ]; then echo "bench-pgbench: $t mount peak RSS $rss MiB" >&2; fi
done

# Table: median over rounds; each target as a ratio to the plain directory and to gocryptfs.
node - "$RESULTS" "${ACTIVE[*]}" "scale $SCALE, $CLIENTS clients, $THREADS threads, ${RUNTIME_S} s" <<'EOF'
const fs = require('fs')
const [file, targetList, settings] = process.argv.slice(2)
const targets = targetList.split(' ').filter(Boolean)
const vals = {}
for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
  const [, , t, v] = line.split('\t')
  ;(vals[t] ??= []).push(Number(v))
}
const median = (a) => {
  if (!a || !a.length) return NaN
  const s = [...a].sort((x, y) => x - y)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const pad = (s, n) => String(s).padEnd(n)
const ratio = (t, base) => (targets.includes(base) ? `${(median(vals[t]) / median(vals[base])).toFixed(2)}x` : 'n/a')
let out = pad('target', 12) + pad('TPS per round', 28) + pad('median', 10) + pad('vs plain', 10) + 'vs gocryptfs\n'
for (const t of targets) {
  const m = median(vals[t])
  out += pad(t, 12) + pad((vals[t] ?? []).join(' / ') || 'n/a', 28) + pad(isNaN(m) ? 'n/a' : m.toFixed(1), 10)
  out += pad(ratio(t, 'plain'), 10) + ratio(t, 'gocryptfs') + '\n'
}
console.log(`\npgbench TPS (${settings}), median of rounds\n${out}`)
EOF
