#!/usr/bin/env bash
# Installs /sbin/mount.fuse.chunkfs, the helper mount(8) runs for `mount -t fuse.chunkfs STORE MNT`
# and for fstab lines of type fuse.chunkfs (DESIGN §7). It runs this checkout's build with this
# node; CHUNKFS_HOME in the environment points it at another checkout (the tests use that).
# Needs root; idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
helper=${MOUNT_HELPER_PATH:-/sbin/mount.fuse.chunkfs}
node=$(command -v node)
want="#!/bin/sh
# mount(8) helper for fuse.chunkfs, installed by $PWD/scripts/install-mount-helper.sh
exec \"$node\" \"\${CHUNKFS_HOME:-$PWD}/dist/cli/mount-helper.js\" \"\$@\""
if [ ! -f "$helper" ] || [ "$(cat "$helper")" != "$want" ]; then
  printf '%s\n' "$want" > "$helper.tmp"
  chmod 755 "$helper.tmp"
  mv "$helper.tmp" "$helper"
  echo "setup: installed $helper"
fi
