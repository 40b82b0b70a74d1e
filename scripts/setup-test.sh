#!/usr/bin/env bash
# Setup for the tests and benchmarks (`npm test`, .ci/run): everything scripts/setup.sh installs for
# mounting, plus the tools the tests and benchmarks drive. Idempotent, as setup.sh; needs root for
# apt-get when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# The independent Go decoder and its four libraries (test/interop.test.ts, `npm run interop`);
# real tools the mount tests and benchmarks run (fio, sqlite3, git, attr and acl for xattrs and
# ACLs, util-linux, rsync; strace: the order of the mount's syscalls, test/mount/reclaim-order.test.ts
# and the flush benchmark); bindfs and gocryptfs, the FUSE peers benchmarks compare with;
# postgresql for the tests' throwaway clusters (DESIGN §9).
TEST_PACKAGES=(golang-go golang-github-minio-highwayhash-dev golang-github-klauspost-reedsolomon-dev
  golang-github-klauspost-compress-dev golang-github-pierrec-lz4-dev fio sqlite3 git attr acl util-linux
  bindfs gocryptfs rsync strace postgresql)

SETUP_EXTRA_PACKAGES="${TEST_PACKAGES[*]}" bash scripts/setup.sh
