#!/usr/bin/env bash
# Cost per metadata operation on PostgreSQL against SQLite (DESIGN §9 "PostgreSQL round trips"), exact
# counts rather than rates: FILES files through bench-meta's phases (scripts/bench/meta-ops.py, 1 process,
# caches dropped before each), on a SQLite store (cfs-r3) and a PostgreSQL one over the Unix socket
# (cfs-r3-pg, and base-r3-pg with BASELINE_REPO). Per operation: the mount's CPU (us, all threads'
# schedstat), the whole cluster's CPU (us, every postgres process) and its target's own backends', statements
# the server ran (pg_stat_statements, top level; trigger statements apart) and transactions committed, with
# the TOP statements by calls. Targets
# interleaved phase by phase, ROUNDS rounds (each round on files of its own).
# Usage (as root): scripts/bench/pg-op-costs.sh   env: FILES=2000 ROUNDS=1 PHASES="create chmod ..." TOP=8
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${FILES:-2000}
PHASES=${PHASES:-"create stat chmod write read rename unlink"}
TOP=${TOP:-8}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-pg-op-costs}
BENCH_NAME=pg-op-costs
TARGETS=${TARGETS:-"cfs-r3 cfs-r3-pg${BASELINE_REPO:+ base-r3-pg}"}
# shellcheck source=scripts/bench/bench-targets.sh
source scripts/bench/bench-targets.sh
bench_prepare python3
# pg_stat_statements needs loading at the server's start: the cluster is started here first.
pg_bench_start_stats() {
  pg_bench_start
  local o="-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$PG_DIR -c max_connections=40"
  o+=" -c shared_buffers=32MB -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
  pg_as_postgres "$PG_BIN_DIR/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 -o "$o" restart >/dev/null
  psql_q postgres 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements'
}
psql_q() { pg_as_postgres "$PG_BIN_DIR/psql" -X -q -At -h "$PG_DIR" -p "$PG_PORT" -d "$1" -c "$2"; }
pg_bench_start_stats
ACTIVE=()
for t in $TARGETS; do setup_target "$t"; ACTIVE+=("$t"); done
# Microseconds on a CPU of every thread of the mount (schedstat: finer than clock ticks).
mount_cpu() {
  cat /proc/"${PID[$1]}"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s / 1000 }'
}
# Nanoseconds on a CPU of every process of this run's cluster (the postmaster and its children: backends,
# WAL writer, checkpointer, ...; not other clusters of the machine), from schedstat as for the mount: clock
# ticks (10 ms) gave 5 us per operation of 2,000 as the finest step.
server_cpu() {
  local pm p
  pm=$(head -1 "$PG_DIR/data/postmaster.pid")
  for p in "$pm" $(pgrep -P "$pm" || true); do cat "/proc/$p/schedstat" 2>/dev/null || true; done \
    | awk '{ s += $1 } END { printf "%.0f\n", s / 1000 }'
}
db_of() { echo "bench_${1//-/_}"; }
# Nanoseconds on a CPU of the target's own backends (its sessions: the metadata connection, the lease's side
# connection), without the cluster's shared processes and the other targets' sessions.
backend_cpu() {
  local p
  for p in $(psql_q postgres "SELECT pid FROM pg_stat_activity WHERE datname = '$(db_of "$1")'"); do
    cat "/proc/$p/schedstat" 2>/dev/null || true
  done | awk '{ s += $1 } END { printf "%.0f\n", s / 1000 }'
}
xacts() { psql_q postgres "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$(db_of "$1")'"; }
per_op() { awk -v a="$1" -v b="$2" -v n="$FILES" -v k="$3" 'BEGIN { printf "%.1f", (b - a) * k / n }'; }
for round in $(seq 1 "${ROUNDS:-1}"); do
 round_order "$round"
 for p in $PHASES; do
  for t in "${ORDER[@]}"; do
    drop_caches
    pg=0; [[ $t == *-pg ]] && pg=1
    [ $pg = 1 ] && { psql_q postgres 'SELECT pg_stat_statements_reset()' >/dev/null; x0=$(xacts "$t"); }
    m0=$(mount_cpu "$t"); s0=$(server_cpu); b0=0; [ $pg = 1 ] && b0=$(backend_cpu "$t")
    v=$(python3 scripts/bench/meta-ops.py "$p" "${DIR[$t]}" "$FILES" 1)
    sleep 1  # the replies of operations answered early, and the WAL writer, finish
    m1=$(mount_cpu "$t"); s1=$(server_cpu); b1=0; [ $pg = 1 ] && b1=$(backend_cpu "$t")
    line="$p $t: $v ops/s, mount $(per_op "$m0" "$m1" 1) us/op"
    line+=", cluster $(per_op "$s0" "$s1" 1) us/op"
    if [ $pg = 1 ]; then
      x1=$(xacts "$t")
      db=$(db_of "$t")
      of_db="FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '$db'"
      line+=" (its backends $(per_op "$b0" "$b1" 1))"
      line+=", transactions $(per_op "$x0" "$x1" 1)/op"
      line+=", statements $(psql_q postgres "SELECT round(sum(calls)::numeric / $FILES, 2) $of_db AND toplevel")/op"
      line+=" (+ $(psql_q postgres "SELECT round(sum(calls)::numeric / $FILES, 2) $of_db AND NOT toplevel")"
      line+=" in triggers)"
      echo "$line"
      psql_q postgres "SELECT round(calls::numeric / $FILES, 2) || ' '
        || (CASE WHEN toplevel THEN '' ELSE '[trigger] ' END) || round((total_exec_time * 1000 / calls)::numeric, 1)
        || 'us ' || left(regexp_replace(query, '\s+', ' ', 'g'), 110) $of_db ORDER BY calls DESC LIMIT $TOP" \
        | sed 's/^/    /'
    else
      echo "$line"
    fi
  done
 done
done
