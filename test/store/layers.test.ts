// The shape DESIGN §2 gives the code, checked on the sources: imports point one way
// (cli -> fs -> store -> src) and no module loads itself through others, store/'s folders are
// layers (io < meta < chunks < small < upkeep, store.ts wiring them), no module outside store/meta/
// writes SQL, engines are folders that nothing else names (DESIGN §9 "Engines"), and only an
// engine's folder (sql/ with them) writes SQL at all: schema, migrations and meta copy included
// (DESIGN §9 "Operations", "Engines").
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT } from '../helpers/root';

const TOP = ['src', 'store', 'fs', 'cli']; // each may import only those before it
/** store/ folders by layer; a folder imports its own layer and lower ones. */
const STORE_LAYER: Record<string, number> = { io: 0, meta: 1, chunks: 2, small: 3, upkeep: 5 };
/** Files at store/'s root, with the lowest layer that may import each: the base ones anywhere. */
const STORE_ROOT_LAYER: Record<string, number> = {
  'fs-error': 0,
  'random-ids': 0,
  config: 0,
  'meta-target': 0,
  'mkfs-staging': 0,
  'mkfs-path': 0,
  'store-key': 0,
  'log-record-keys': 0,
  'disk-identity': 0,
  'disk-ids': 0,
  'restored-meta': 1,
  'restored-walk': 0,
  'file-deletes': 4,
  'file-io': 4,
  follower: 5,
  'store-lock': 6,
  store: 6,
  'meta-move': 6,
};
const SOURCES_MAX = 2000; // a bound on the walk

function sources(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) sources(rel, out);
    else if (e.name.endsWith('.ts')) out.push(rel);
    if (out.length > SOURCES_MAX) throw new Error(`more than ${SOURCES_MAX} sources under ${dir}`);
  }
  return out;
}

function imports(file: string): string[] {
  const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|require\(\s*)'(\.{1,2}\/[^']+)'/g))
    out.push(path.normalize(path.join(path.dirname(file), m[1])));
  return out;
}

/** The layer of a store/ module: its folder's, or a root file's. */
function storeLayer(mod: string): number {
  const parts = mod.split(path.sep);
  if (parts.length > 2) return STORE_LAYER[parts[1]] ?? -1;
  return STORE_ROOT_LAYER[parts[1].replace(/\.ts$/, '')] ?? -1;
}

const ALL = TOP.flatMap((d) => sources(d));

/** The engines' folders, and sql/: the statements both SQL engines share (as JuiceFS's sql.go). */
const ENGINE_DIRS = [
  path.join('store', 'meta', 'sqlite'),
  path.join('store', 'meta', 'postgres'),
  path.join('store', 'meta', 'sql'),
];
/** The one file outside the engines' folders that opens, creates and copies through them (DESIGN §9 "Engines"). */
const ENGINE_FACTORY = path.join('store', 'meta', 'engine-open.ts');

function inEngineDir(file: string): boolean {
  return ENGINE_DIRS.some((d) => file.startsWith(d + path.sep));
}

test('imports point one way: cli -> fs -> store -> src', (t) => {
  const bad: string[] = [];
  for (const file of ALL) {
    const mine = TOP.indexOf(file.split(path.sep)[0]);
    for (const target of imports(file)) {
      const theirs = TOP.indexOf(target.split(path.sep)[0]);
      if (theirs > mine) bad.push(`${file} imports ${target}`);
    }
  }
  t.deepEqual(bad, []);
});

test("store/'s folders are layers: io < meta < chunks < small < file-io < upkeep < store.ts", (t) => {
  const bad: string[] = [];
  const storeFiles = ALL.filter((f) => f.startsWith(`store${path.sep}`));
  for (const file of storeFiles) {
    const mine = storeLayer(file);
    if (mine < 0) bad.push(`${file}: in no layer (add it to STORE_LAYER or STORE_ROOT_LAYER)`);
    for (const target of imports(file).filter((m) => m.startsWith(`store${path.sep}`))) {
      if (storeLayer(target) > mine)
        bad.push(`${file} (layer ${mine}) imports ${target} (layer ${storeLayer(target)})`);
    }
  }
  t.deepEqual(bad, []);
  t.true(storeFiles.length > 50, `found ${storeFiles.length} store sources`);
});

/**
 * The modules a file loads when it runs: every import but `import type` (erased by the build), as
 * files of the walk. A cycle of them makes a module run while another of the cycle is half-loaded.
 */
function valueImports(file: string, known: Set<string>): string[] {
  const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'/gm),
    ...text.matchAll(/(?:^\s*import\s+|import\s*\(\s*|require\(\s*)'(\.{1,2}\/[^']+)'/gm),
  ];
  return specs
    .map((m) => path.normalize(path.join(path.dirname(file), m[1])))
    .flatMap((mod) => [`${mod}.ts`, path.join(mod, 'index.ts')].filter((f) => known.has(f)).slice(0, 1));
}

/** Each cycle of the graph, once, as "a -> b -> a" (a depth-first walk: an edge back to the path closes one). */
function importCycles(graph: Map<string, string[]>): string[] {
  const done = new Set<string>();
  const onPath: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string): void => {
    const at = onPath.indexOf(file);
    if (at >= 0) {
      cycles.push([...onPath.slice(at), file].join(' -> '));
      return;
    }
    if (done.has(file)) return;
    onPath.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    onPath.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return cycles;
}

test('no import cycles: a module never loads, through others, the module loading it (one concept per file)', (t) => {
  const known = new Set(ALL);
  const graph = new Map(ALL.map((f) => [f, valueImports(f, known)]));
  t.deepEqual(importCycles(graph), []);
  const edges = [...graph.values()].reduce((n, targets) => n + targets.length, 0);
  t.true(edges > ALL.length, `${edges} imports among ${ALL.length} sources`);
});

test('no SQL outside store/meta/', (t) => {
  const sql = /\.prepare\(|\.pragma\(|\b(SELECT|INSERT INTO|UPDATE|DELETE FROM)\b[^'`]*\b(FROM|SET|VALUES|WHERE)\b/;
  const bad = ALL.filter((f) => !f.startsWith(path.join('store', 'meta') + path.sep)).filter((f) =>
    fs
      .readFileSync(path.join(REPO_ROOT, f), 'utf8')
      .split('\n')
      .some((line) => !line.trim().startsWith('//') && !line.trim().startsWith('*') && sql.test(line)),
  );
  t.deepEqual(bad, []);
});

test("no database driver outside the engines' folders: the rest sees the metadata interface only", (t) => {
  const driver = /(?:from\s+|import\s*\(\s*|require\(\s*)'(better-sqlite3|libpq)'/;
  const bad = ALL.filter((f) => !inEngineDir(f)).filter((f) =>
    driver.test(fs.readFileSync(path.join(REPO_ROOT, f), 'utf8')),
  );
  t.deepEqual(bad, []);
});

/** Lines of code, without comment lines. */
function codeLines(file: string): string[] {
  return fs
    .readFileSync(path.join(REPO_ROOT, file), 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line));
}

test('engines are folders: outside store/meta/sqlite/ and postgres/, only engine-open.ts imports them', (t) => {
  const bad: string[] = [];
  for (const file of ALL.filter((f) => !inEngineDir(f) && f !== ENGINE_FACTORY)) {
    for (const target of imports(file)) if (inEngineDir(target)) bad.push(`${file} imports ${target}`);
  }
  t.deepEqual(bad, []);
});

test("no code outside the engines' folders compares an engine's name: engines say what they can do (caps)", (t) => {
  const name = `'(?:sqlite|postgres)'`;
  const compares = new RegExp(
    `(?:===|!==)\\s*${name}|${name}\\s*(?:===|!==)|(?<!typeof [\\w.]*)\\.engine\\s*(?:===|!==)|(?:===|!==)\\s*[\\w.]*\\.engine\\b`,
  );
  const bad = ALL.filter((f) => !inEngineDir(f)).flatMap((f) =>
    codeLines(f)
      .filter((line) => compares.test(line))
      .map((line) => `${f}: ${line.trim()}`),
  );
  t.deepEqual(bad, []);
});

/** SQL naming one of the store's tables (uppercase keywords: SQL, not prose). */
const STORE_TABLE_SQL = new RegExp(
  '\\b(FROM|INTO|UPDATE|JOIN|TABLE|ON)\\s+(inodes|dirents|xattrs|chunks|intents|heal_queue|containers|reclaim|' +
    'counters|past_size|prealloc|store_id|orphans|ino_high)\\b',
);
/** SQL text in a line of code: a statement, a clause, or a call that prepares or runs one. */
const SQL_TEXT = new RegExp(
  [
    '\\.prepare\\(',
    '\\.pragma\\(',
    '\\b(db|target|probe)\\.exec\\(',
    '\\bCOLLATE\\b',
    "\\b(SELECT|INSERT INTO|UPDATE|DELETE FROM)\\b[^'`]*\\b(FROM|SET|VALUES|WHERE)\\b",
  ].join('|'),
);

function linesMatching(f: string, re: RegExp): boolean {
  return codeLines(f).some((line) => re.test(line));
}

test("SQL on the store's tables only in an engine's folder (namespace, data, chunk map, queues, counters...)", (t) => {
  t.deepEqual(
    ALL.filter((f) => !inEngineDir(f) && linesMatching(f, STORE_TABLE_SQL)),
    [],
  );
  t.true(
    ENGINE_DIRS.every((d) => ALL.some((f) => f.startsWith(d + path.sep) && linesMatching(f, STORE_TABLE_SQL))),
    'each engine writes its own',
  );
});

test("no SQL text outside the engines' folders: schema, migrations and meta copy are engine operations too", (t) => {
  t.deepEqual(
    ALL.filter((f) => !inEngineDir(f) && linesMatching(f, SQL_TEXT)),
    [],
  );
  t.true(
    ENGINE_DIRS.every((d) => ALL.some((f) => f.startsWith(d + path.sep) && linesMatching(f, SQL_TEXT))),
    "the pattern finds the engines' own",
  );
});
