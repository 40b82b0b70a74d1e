# PostgreSQL for the mounted benchmarks (DESIGN §9; sourced by scripts/bench/bench-targets.sh): one
# throwaway cluster per run, made the way test/helpers/pg-cluster.ts makes it (Debian's initdb and
# pg_ctl as the `postgres` user through runuser, in a temporary directory, C locale), listening on a
# Unix socket in that directory and on a free loopback port. The network case goes through
# scripts/bench/delay-proxy.py, which sleeps PG_DELAY_MS each way: this kernel has no sch_netem for `tc
# netem` (and no modules at all), so the delay is made in user space. The proxy's own hops add about
# 0.2 ms, so 0.15 ms each way gives about 0.55 ms per round trip against 0.03 ms over the socket
# (both measured and printed at the start of each run).
# Everything is stopped and deleted by pg_bench_stop (bench-targets.sh's exit trap), even on failure.
PG_BIN_DIR=${CHUNKFS_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_DELAY_MS=${PG_DELAY_MS:-0.15}
PG_DIR=
PG_PORT=
PG_PROXY_PID=
PG_PROXY_PORT=
PG_URL=

pg_as_postgres() { runuser -u postgres -- "$@"; }

# A free loopback TCP port.
pg_free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

pg_bench_start() {
  [ -n "$PG_DIR" ] && return 0
  [ -x "$PG_BIN_DIR/initdb" ] || { echo "$BENCH_NAME: $PG_BIN_DIR/initdb missing (apt-get install postgresql)" >&2; return 1; }
  PG_DIR=$(mktemp -d /tmp/cfsbpg-XXXXXX)  # short: a socket path must fit in 107 bytes
  chown postgres:postgres "$PG_DIR"; chmod 0700 "$PG_DIR"
  PG_PORT=$(pg_free_port)
  pg_as_postgres "$PG_BIN_DIR/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync --locale=C --encoding=UTF8 >/dev/null
  pg_as_postgres "$PG_BIN_DIR/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$PG_DIR -c max_connections=40 -c shared_buffers=32MB" start >/dev/null
}

pg_bench_proxy() {
  [ -n "$PG_PROXY_PID" ] && return 0
  python3 scripts/bench/delay-proxy.py 0 127.0.0.1 "$PG_PORT" "$PG_DELAY_MS" > "$PG_DIR/proxy.log" 2>&1 &
  PG_PROXY_PID=$!
  wait_line "$PG_DIR/proxy.log" "^listening" || return 1
  PG_PROXY_PORT=$(awk '/^listening/ { print $2 }' "$PG_DIR/proxy.log")
  # The round trip it gives, measured (the figure the results stand on).
  echo "$BENCH_NAME: PostgreSQL round trip through the delay proxy: $(pg_rtt_ms "postgresql://postgres@127.0.0.1:$PG_PROXY_PORT/postgres?sslmode=disable") ms; over the socket: $(pg_rtt_ms "postgresql:///postgres?host=$PG_DIR&port=$PG_PORT&user=postgres") ms" >&2
}

# Median milliseconds of 200 `SELECT 1` round trips over one connection (psql, \timing).
pg_rtt_ms() {
  local i
  for i in $(seq 1 200); do echo 'SELECT 1;'; done | { echo '\timing on'; cat; } \
    | "$PG_BIN_DIR/psql" -X -q -d "$1" 2>/dev/null | awk '/^Time:/ { print $2 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# A new empty database named name; its libpq URI in PG_URL. kind: pg (Unix socket) or pgnet (TCP
# through the delay proxy). Not in a subshell: it starts the cluster and the proxy once per run.
pg_bench_url() {
  local kind=$1 name=$2
  pg_bench_start || return 1
  pg_as_postgres "$PG_BIN_DIR/psql" -h "$PG_DIR" -p "$PG_PORT" -d postgres -q -c "CREATE DATABASE $name" || return 1
  case $kind in
    pg) PG_URL="postgresql:///$name?host=$PG_DIR&port=$PG_PORT&user=postgres" ;;
    pgnet) pg_bench_proxy || return 1; PG_URL="postgresql://postgres@127.0.0.1:$PG_PROXY_PORT/$name?sslmode=disable" ;;
  esac
}

pg_bench_stop() {
  [ -n "$PG_PROXY_PID" ] && { kill "$PG_PROXY_PID" 2>/dev/null || true; }
  if [ -n "$PG_DIR" ]; then
    pg_as_postgres "$PG_BIN_DIR/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
  PG_DIR=
}
