#!/usr/bin/env bash
# Transforms benchmark (DESIGN §10), one run:
#  1. Compression ratio through the mount on two corpora (this repository's node_modules, and
#     /usr/share/doc), each as one tar file (so every byte is in 4 MiB chunks, not small-file
#     containers), on replica:1,zstd and replica:1,lz4, against the zstd and lz4 command-line tools at
#     the same level (zstd -3, lz4 -1) on the same tar. The store's ratio is raw bytes / stored payload
#     bytes of the file's chunks (chunkfs status: compressed chunks' stored bytes + chunks stored raw).
#  2. fio (scripts/bench/bench-fio.sh) and the small-file benchmark (scripts/bench/bench-smallfiles.sh) with each
#     transform against the plain layout and against gocryptfs, in the same run.
# Usage (as root): scripts/bench/bench-transforms.sh   env: CORPUS_MB=256 (cap per corpus), SKIP_FIO=1,
#   SKIP_SMALL=1, FIO_TARGETS, SMALL_TARGETS, and bench-fio's ROUNDS, RUNTIME_S, SIZE_MB, FIO_EXTRA.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
CORPUS_MB=${CORPUS_MB:-256}
BENCH_DIR=${BENCH_DIR:-/var/tmp/chunkfs-bench-transforms}
FIO_TARGETS=${FIO_TARGETS:-"plain gocryptfs cfs3-r3 cfs3-r3-zstd cfs3-r3-lz4 cfs3-r3-aes cfs3-r3-zstd-aes cfs3-ec42 cfs3-ec42-zstd-aes"}
SMALL_TARGETS=${SMALL_TARGETS:-"plain gocryptfs cfs3-r3 cfs3-r3-zstd cfs3-r3-aes cfs3-r3-zstd-aes"}
CLI=$REPO/dist/cli/cli.js
for tool in zstd lz4 tar; do
  command -v $tool >/dev/null || { [ "$(id -u)" -eq 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $tool >/dev/null; }
done
[ -f "$CLI" ] || npx tsc -p tsconfig.json

rm -rf "$BENCH_DIR"; mkdir -p "$BENCH_DIR"
MNT=$BENCH_DIR/mnt PID=
cleanup() {
  [ -z "$PID" ] || { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
  mountpoint -q "$MNT" 2>/dev/null && fusermount3 -uz "$MNT" || true
}
trap cleanup EXIT

# The corpus as one tar, files in name order, cut at CORPUS_MB (tar then stops on SIGPIPE).
make_tar() {
  local src=$1 out=$2
  (cd "$src" && find . -type f -print0 | sort -z | tar --null -T - -cf - 2>/dev/null | head -c $((CORPUS_MB << 20)) > "$out") || true
}

# Stored payload bytes of the store's chunks (chunkfs status --json): compressed ones at their stored
# length, the rest (stored raw) at their raw length.
store_ratio() {
  local store=$1 raw=$2
  node "$CLI" status "$store" --json | node -e '
    let s = ""; process.stdin.on("data", (d) => { s += d }).on("end", () => {
      const r = JSON.parse(s); const raw = Number(process.argv[1]);
      const c = (r.transformedChunks || []).filter((x) => x.transforms === "compressed");
      const rawIn = c.reduce((n, x) => n + x.rawBytes, 0), stored = c.reduce((n, x) => n + x.storedBytes, 0);
      console.log((raw / (stored + (raw - rawIn))).toFixed(3));
    })' "$raw"
}

ratio_line() {
  local name=$1 tarfile=$2 raw zc lc
  raw=$(stat -c %s "$tarfile")
  zc=$(zstd -3 -q -c "$tarfile" | wc -c)
  lc=$(lz4 -1 -q -c "$tarfile" | wc -c)
  local out="$name ($((raw >> 20)) MiB tar):"
  for algo in zstd lz4; do
    local store=$BENCH_DIR/store-$algo-$name
    node "$CLI" mkfs "$store" --disks 1 --layout "replica:1,$algo" >/dev/null
    mkdir -p "$MNT"
    node "$CLI" mount "$store" "$MNT" >"$BENCH_DIR/mount.log" 2>&1 & PID=$!
    for _ in $(seq 1 100); do grep -q "chunkfs: mounted" "$BENCH_DIR/mount.log" && break; sleep 0.2; done
    cp "$tarfile" "$MNT/corpus.tar" && sync "$MNT/corpus.tar"
    cmp "$tarfile" "$MNT/corpus.tar"
    out="$out chunkfs $algo $(store_ratio "$store" "$raw")x,"
    kill "$PID"; wait "$PID" || true; PID=
  done
  echo "$out zstd -3 CLI $(node -e "console.log(($raw / $zc).toFixed(3))")x, lz4 -1 CLI $(node -e "console.log(($raw / $lc).toFixed(3))")x"
}

echo "== compression ratio (raw / stored), one run"
make_tar "$REPO/node_modules" "$BENCH_DIR/node_modules.tar"
make_tar /usr/share/doc "$BENCH_DIR/doc.tar"
ratio_line node_modules "$BENCH_DIR/node_modules.tar"
ratio_line usr-share-doc "$BENCH_DIR/doc.tar"
rm -f "$BENCH_DIR"/*.tar

if [ -z "${SKIP_FIO:-}" ]; then
  echo "== fio per transform (ratios to plain and to gocryptfs)"
  TARGETS=$FIO_TARGETS BENCH_DIR=$BENCH_DIR/fio bash scripts/bench/bench-fio.sh
fi
if [ -z "${SKIP_SMALL:-}" ]; then
  echo "== small files per transform"
  TARGETS=$SMALL_TARGETS BENCH_DIR=$BENCH_DIR/small bash scripts/bench/bench-smallfiles.sh
fi
