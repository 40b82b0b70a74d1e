// A namespace model for the store crash tests (namespace-crash.test.ts): what the tree should be
// after each operation, and the one canonical text of a tree, from the model or read from a store,
// so "the tree is a state the model went through" is a string comparison. The text names every
// path with its kind and permission bits; files with their size, content hash, link count and which
// path they share an inode with; times only where utimens set them (before 2001; others come from "now");
// symlinks with their target; user xattrs of every inode.
import { createHash } from 'node:crypto';
import { ROOT_INO } from '../../store/meta/meta';
import type { Store } from '../../store/store';
import { assert } from '../../src/errors';

type Kind = 'file' | 'dir' | 'symlink';

interface Node {
  kind: Kind;
  mode: number;
  data: Buffer;
  /** Set by utimens; null once an operation stamps "now". */
  mtimeNs: bigint | null;
  xattrs: Map<string, string>;
  target: string;
}

/** One line per path (the root is ''), before they are sorted and joined. */
interface Line {
  path: string;
  id: number;
  kind: Kind;
  text: string;
}

/** utimens in the tests sets times before 2001: any later one was stamped "now", which the model does not know. */
export const SET_TIME_NS_MAX = 978_307_200n * 1_000_000_000n;

const PERMISSION_BITS = 0o7777;
const ROOT_MODE = 0o755;

function parentOf(p: string): string {
  const at = p.lastIndexOf('/');
  return at < 0 ? '' : p.slice(0, at);
}

function node(kind: Kind, mode: number, target = ''): Node {
  return { kind, mode, data: Buffer.alloc(0), mtimeNs: null, xattrs: new Map(), target };
}

function xattrText(xattrs: ReadonlyMap<string, string>): string {
  return [...xattrs]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => ` ${k}=${v}`)
    .join('');
}

/** The tree's text: lines sorted by path, each file naming the first path of its inode. */
function treeText(lines: Line[]): string {
  lines.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const first = new Map<number, string>();
  const out: string[] = [];
  for (const l of lines) {
    if (!first.has(l.id)) first.set(l.id, l.path);
    const same = l.kind === 'file' && first.get(l.id) !== l.path ? ` same-inode-as ${first.get(l.id)!}` : '';
    out.push(`/${l.path} ${l.text}${same}`);
  }
  return out.join('\n');
}

function nodeText(kind: Kind, mode: number, extra: string, xattrs: ReadonlyMap<string, string>): string {
  return `${kind} ${(mode & PERMISSION_BITS).toString(8)}${extra}${xattrText(xattrs)}`;
}

function fileExtra(data: Buffer, nlink: number, mtimeNs: bigint | null): string {
  const hash = createHash('sha256').update(data).digest('hex').slice(0, 16);
  return ` size ${data.length} sha ${hash} nlink ${nlink}${mtimeNs === null ? '' : ` mtime ${mtimeNs}`}`;
}

export class TreeModel {
  private nodes = new Map<number, Node>([[0, node('dir', ROOT_MODE)]]);
  private names = new Map<string, number>([['', 0]]);
  private nextId = 1;

  clone(): TreeModel {
    const c = new TreeModel();
    c.nodes = new Map([...this.nodes].map(([id, n]) => [id, { ...n, xattrs: new Map(n.xattrs) }]));
    c.names = new Map(this.names);
    c.nextId = this.nextId;
    return c;
  }

  private id(p: string): number {
    const id = this.names.get(p);
    assert(id !== undefined, `model: no ${p}`);
    return id;
  }
  private at(p: string): Node {
    return this.nodes.get(this.id(p))!;
  }
  private add(p: string, n: Node): void {
    assert(!this.names.has(p) && this.at(parentOf(p)).kind === 'dir', `model: cannot make ${p}`);
    this.nodes.set(this.nextId, n);
    this.names.set(p, this.nextId++);
  }
  /** Drop a name; its inode goes with its last name. */
  private drop(p: string): void {
    const id = this.id(p);
    this.names.delete(p);
    if (![...this.names.values()].includes(id)) this.nodes.delete(id);
  }
  private children(p: string): string[] {
    return [...this.names.keys()].filter((q) => q !== '' && parentOf(q) === p);
  }

  mkdir(p: string, mode: number): void {
    this.add(p, node('dir', mode));
  }
  create(p: string, mode: number): void {
    this.add(p, node('file', mode));
  }
  symlink(p: string, target: string): void {
    this.add(p, node('symlink', 0o777, target));
  }
  write(p: string, data: Buffer): void {
    const n = this.at(p);
    const grown = Buffer.alloc(Math.max(n.data.length, data.length));
    n.data.copy(grown);
    data.copy(grown);
    n.data = grown;
    n.mtimeNs = null;
  }
  truncate(p: string, sizeBytes: number): void {
    const n = this.at(p);
    n.data = Buffer.concat([n.data, Buffer.alloc(Math.max(0, sizeBytes - n.data.length))]).subarray(0, sizeBytes);
    n.mtimeNs = null;
  }
  link(from: string, to: string): void {
    assert(!this.names.has(to), `model: ${to} exists`);
    this.names.set(to, this.id(from));
  }
  /** rename(2): over an existing file or empty directory, a directory's whole subtree moves. */
  rename(from: string, to: string): void {
    const id = this.id(from);
    if (this.names.has(to)) {
      assert(this.children(to).length === 0, `model: ${to} is not empty`);
      this.drop(to);
    }
    for (const [q, qid] of [...this.names]) {
      if (q !== from && !q.startsWith(`${from}/`)) continue;
      this.names.delete(q);
      this.names.set(to + q.slice(from.length), qid);
    }
    assert(this.names.get(to) === id, `model: ${from} moved`);
  }
  exchange(a: string, b: string): void {
    const [ia, ib] = [this.id(a), this.id(b)];
    assert(this.at(a).kind !== 'dir' && this.at(b).kind !== 'dir', 'model: exchange of files only');
    this.names.set(a, ib);
    this.names.set(b, ia);
  }
  unlink(p: string): void {
    assert(this.at(p).kind !== 'dir', `model: unlink of directory ${p}`);
    this.drop(p);
  }
  rmdir(p: string): void {
    assert(this.at(p).kind === 'dir' && this.children(p).length === 0, `model: rmdir of ${p}`);
    this.drop(p);
  }
  chmod(p: string, mode: number): void {
    this.at(p).mode = mode;
  }
  utimens(p: string, mtimeNs: bigint): void {
    assert(mtimeNs < SET_TIME_NS_MAX, 'model: a time set by utimens is before 2001');
    this.at(p).mtimeNs = mtimeNs;
  }
  setxattr(p: string, name: string, value: string): void {
    this.at(p).xattrs.set(name, value);
  }

  text(): string {
    const lines: Line[] = [];
    for (const [p, id] of this.names) {
      const n = this.nodes.get(id)!;
      const nlink = [...this.names.values()].filter((v) => v === id).length;
      const extra =
        n.kind === 'file' ? fileExtra(n.data, nlink, n.mtimeNs) : n.kind === 'symlink' ? ` -> ${n.target}` : '';
      lines.push({ path: p, id, kind: n.kind, text: nodeText(n.kind, n.mode, extra, n.xattrs) });
    }
    return treeText(lines);
  }
}

/** Reads past a file's size, so a file longer than its size says shows it. */
const READ_SLACK_BYTES = 1;

/**
 * The store's tree as TreeModel.text() writes it: every file is read whole (its needle or shards
 * must be there and verify).
 */
export async function storeTreeText(s: Store): Promise<string> {
  const lines: Line[] = [];
  const visit = async (ino: number, p: string): Promise<void> => {
    const a = s.ns.attr(ino);
    assert(a.type === 'file' || a.type === 'dir' || a.type === 'symlink', `store: ${p} is a ${a.type}`);
    const xattrs = new Map<string, string>();
    for (const name of s.ns.listxattr(ino))
      if (name.startsWith('user.')) xattrs.set(name, s.ns.getxattr(ino, name).toString());
    let extra = '';
    if (a.type === 'file') {
      const data = await s.read(ino, 0, a.sizeBytes + READ_SLACK_BYTES);
      extra = fileExtra(data, a.nlink, a.mtimeNs < SET_TIME_NS_MAX ? a.mtimeNs : null);
    } else if (a.type === 'symlink') extra = ` -> ${s.ns.readlink(ino)}`;
    lines.push({ path: p, id: ino, kind: a.type, text: nodeText(a.type, a.mode, extra, xattrs) });
    if (a.type !== 'dir') return;
    for (const e of s.ns.readdir(ino)) await visit(e.ino, p === '' ? e.name : `${p}/${e.name}`);
  };
  await visit(ROOT_INO, '');
  return treeText(lines);
}

/** The inode a path names in the store (the root is ''). */
export function inoOf(s: Store, p: string): number {
  let ino = ROOT_INO;
  for (const name of p === '' ? [] : p.split('/')) {
    const a = s.ns.lookup(ino, name);
    assert(a !== null, `store: no ${p}`);
    ino = a.ino;
  }
  return ino;
}

/** Parent inode and name of a path. */
export function placeOf(s: Store, p: string): [number, string] {
  return [inoOf(s, parentOf(p)), p.slice(p.lastIndexOf('/') + 1)];
}
