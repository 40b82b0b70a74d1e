#!/usr/bin/env bash
# Setup for mounting, on a fresh Debian 12 machine: the Debian packages the build and a mount need,
# npm packages, the native and TypeScript builds. `npm start` runs it; scripts/setup-test.sh runs it
# and then installs what the tests and benchmarks drive (`npm test`, .ci/run).
# Idempotent: each step runs only when something is missing, so it can run every time.
# Needs root for apt-get (as on CI). Extra packages to install with these: SETUP_EXTRA_PACKAGES.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages a mount needs: FUSE (libfuse3 + its headers for our binding, fuse3 for
# fusermount3 and the fusermount link libfuse2 uses; fuse3 replaces the old `fuse` package, so that
# one must not be asked for), libfuse2 for the fuse-native transport (built by npm ci's postinstall),
# the native build's tools (pkg-config, python3, make, g++: node-gyp), and libpq-dev: npm ci builds
# the libpq binding against its pg_config and headers even for a store on SQLite (DESIGN §9).
APT_PACKAGES=(libfuse3-dev fuse3 libfuse2 pkg-config python3 make g++ libpq-dev)
read -r -a extra <<< "${SETUP_EXTRA_PACKAGES:-}"
APT_PACKAGES+=("${extra[@]}")

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm packages: `npm ci` when node_modules is missing or older than the lock file or the
# fuse-native patch (applied by postinstall to a fresh copy only).
stamp=node_modules/.chunkfs-installed
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ] || [ package.json -nt "$stamp" ] \
  || [ patches/fuse-native+2.2.6.patch -nt "$stamp" ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
  touch "$stamp"
fi

# The addons (Reed-Solomon/HighwayHash, and the libfuse3 binding) are the root package's own
# native build (binding.gyp); npm ci builds them, but a tree installed before one existed may lack it.
# Also when a native source is newer than the build (a checkout or pull that changed native/).
stale=""
if [ -f build/Release/chunkfs_fuse3.node ]; then
  stale=$(find native binding.gyp -newer build/Release/chunkfs_fuse3.node -print -quit 2>/dev/null || true)
fi
if [ ! -f build/Release/chunkfs_rs.node ] || [ ! -f build/Release/chunkfs_fuse3.node ] \
  || [ ! -x build/Release/chunkfs_unmount_guard ] || [ -n "$stale" ]; then
  echo "setup: building the native addons"
  # npm's own node-gyp, pointed at the Node headers npm is configured with (this
  # machine has no internet to download them).
  nodedir=$(npm config get nodedir 2>/dev/null || true)
  node "$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js" rebuild \
    ${nodedir:+--nodedir="$nodedir"}
fi

echo "setup: building"
# From scratch: a module moved or deleted since the last build must not linger in dist/ (the test
# runner would run a stale copy of a moved test).
rm -rf dist
npx tsc -p tsconfig.json

# mount -t fuse.chunkfs and fstab lines go through /sbin/mount.fuse.chunkfs (root only).
if [ "$(id -u)" -eq 0 ]; then bash scripts/install-mount-helper.sh; fi
