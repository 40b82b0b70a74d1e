#!/usr/bin/env node
// Postinstall: apply patches/fuse-native+2.2.6.patch to node_modules/fuse-native and build the
// binding from that source with node-gyp (the prebuilt binary is the unpatched code).
// The patch fixes what chunkfs needs: utimens gets atime AND mtime (ns, UTIME_NOW/UTIME_OMIT),
// every op gets the caller's uid/gid/pid/umask (fuse_get_context), fgetattr gets the fh,
// opendir gets its fh right, stat times keep nanoseconds, NULL paths for open-unlinked files,
// the options big_writes, max_write, use_ino, hard_remove, user_id (fixed), and getxattr of a
// name outside user.* answered ENODATA in the FUSE thread (the kernel probes security.capability
// before every write; chunkfs stores only user.*).
// Idempotent; plain JavaScript with no dependencies so it runs before the TypeScript build.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const REPO = path.resolve(__dirname, '..');
const PKG_DIR = path.join(REPO, 'node_modules', 'fuse-native');
const PATCH = path.join(REPO, 'patches', 'fuse-native+2.2.6.patch');
const MARKER = 'CHUNKFS_PATCHED v2';
const HUNKS_MAX = 1000;

function main() {
  if (!fs.existsSync(PKG_DIR)) {
    console.log('patch-fuse-native: fuse-native not installed, nothing to do');
    return;
  }
  const version = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'package.json'), 'utf8')).version;
  if (version !== '2.2.6') throw new Error(`patch-fuse-native: expected fuse-native 2.2.6, found ${version}`);
  const patched = applyPatch(fs.readFileSync(PATCH, 'utf8'));
  const built = path.join(PKG_DIR, 'build', 'Release', 'fuse.node');
  if (patched || !fs.existsSync(built) || !bindingIsPatched(built)) build();
  if (!bindingIsPatched(built)) throw new Error('patch-fuse-native: built binding lacks the patch marker');
  console.log('patch-fuse-native: fuse-native is patched and built');
}

// Returns true when at least one file was changed.
function applyPatch(text) {
  let changed = false;
  for (const filePatch of splitFiles(text)) {
    const target = path.join(PKG_DIR, filePatch.file);
    const original = fs.readFileSync(target, 'utf8');
    if (original.includes(MARKER)) continue;
    fs.writeFileSync(target, applyHunks(original, filePatch.hunks, filePatch.file));
    changed = true;
  }
  return changed;
}

function splitFiles(text) {
  const files = [];
  const lines = text.split('\n');
  let current = null;
  let hunk = null;
  for (const line of lines) {
    if (line.startsWith('--- ')) continue;
    if (line.startsWith('+++ ')) {
      current = { file: line.slice(4).replace(/^b\//, '').split('\t')[0], hunks: [] };
      files.push(current);
      continue;
    }
    const m = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/.exec(line);
    if (m) {
      hunk = { oldStart: Number(m[1]), oldLines: [], newLines: [] };
      current.hunks.push(hunk);
      if (current.hunks.length > HUNKS_MAX) throw new Error('patch-fuse-native: too many hunks');
      continue;
    }
    if (!hunk) continue;
    if (line.startsWith(' ')) {
      hunk.oldLines.push(line.slice(1));
      hunk.newLines.push(line.slice(1));
    } else if (line.startsWith('-')) hunk.oldLines.push(line.slice(1));
    else if (line.startsWith('+')) hunk.newLines.push(line.slice(1));
    else if (line.startsWith('\\')) continue;
  }
  return files;
}

// Each hunk must match exactly; it is looked for at its stated line first, then anywhere
// after the previous hunk (the offsets shift by earlier hunks).
function applyHunks(original, hunks, file) {
  const lines = original.split('\n');
  const out = [];
  let cursor = 0;
  for (const hunk of hunks) {
    const at = findBlock(lines, hunk.oldLines, cursor, hunk.oldStart - 1);
    if (at < 0) throw new Error(`patch-fuse-native: hunk at line ${hunk.oldStart} of ${file} does not apply`);
    for (let i = cursor; i < at; i++) out.push(lines[i]);
    for (const l of hunk.newLines) out.push(l);
    cursor = at + hunk.oldLines.length;
  }
  for (let i = cursor; i < lines.length; i++) out.push(lines[i]);
  return out.join('\n');
}

function findBlock(lines, block, from, hint) {
  const matches = (at) => block.every((l, i) => lines[at + i] === l);
  if (hint >= from && matches(hint)) return hint;
  for (let at = from; at + block.length <= lines.length; at++) if (matches(at)) return at;
  return -1;
}

function bindingIsPatched(built) {
  try {
    const out = execFileSync(process.execPath, [
      '-e',
      `process.stdout.write(String(require(${JSON.stringify(built)}).chunkfs_patch_version))`,
    ]);
    return out.toString() === '2';
  } catch {
    return false;
  }
}

// node-gyp ships with npm; local Node headers (Debian's /usr/include/node) avoid a download.
function build() {
  const gyp = findNodeGyp();
  const args = [gyp, 'rebuild'];
  const nodeDir = path.resolve(path.dirname(process.execPath), '..');
  if (fs.existsSync(path.join(nodeDir, 'include', 'node', 'node_api.h'))) args.push(`--nodedir=${nodeDir}`);
  console.log(`patch-fuse-native: building ${PKG_DIR}`);
  execFileSync(process.execPath, args, { cwd: PKG_DIR, stdio: 'inherit' });
}

function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  if (process.env.npm_execpath) {
    candidates.push(
      path.join(path.dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    );
  }
  const prefix = path.resolve(path.dirname(process.execPath), '..');
  candidates.push(path.join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  for (const c of candidates) if (fs.existsSync(c)) return c;
  throw new Error('patch-fuse-native: node-gyp not found (it ships with npm); tried ' + candidates.join(', '));
}

main();
