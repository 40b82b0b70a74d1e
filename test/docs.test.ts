// The docs hold what the code points at: every relative link in README.md and docs/*.md resolves
// (the file exists, and a #fragment names a heading of that file: GitHub's anchor rule, lowercase,
// punctuation dropped, spaces to dashes), and every "DESIGN §N" a source file cites names a section
// of docs/design.md (DESIGN §2 is about this: the design is written down where the code cites it).
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT } from './helpers/root';

function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const line of markdown.split('\n')) {
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (m !== null)
      out.add(
        m[1]
          .trim()
          .toLowerCase()
          .replace(/[^\p{L}\p{N} _-]/gu, '')
          .replace(/ /g, '-'),
      );
  }
  return out;
}

const FILES = [
  'README.md',
  ...fs
    .readdirSync(path.join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...fs
    .readdirSync(path.join(REPO_ROOT, 'scripts'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `scripts/${f}`),
];

test('relative links in README.md and docs/ resolve to files and headings', (t) => {
  let links = 0;
  for (const file of FILES) {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1];
      if (/^[a-z]+:/.test(target)) continue; // http:, mailto:
      links++;
      const [rel, fragment] = target.split('#');
      const resolved = rel === '' ? path.join(REPO_ROOT, file) : path.join(REPO_ROOT, path.dirname(file), rel);
      t.true(fs.existsSync(resolved), `${file}: ${target} -> ${resolved} does not exist`);
      if (fragment !== undefined && fs.existsSync(resolved)) {
        t.true(
          anchors(fs.readFileSync(resolved, 'utf8')).has(fragment),
          `${file}: #${fragment} is not a heading of ${rel || file}`,
        );
      }
    }
  }
  t.true(links >= 8, `found ${links} links`);
});

/** Folders whose source files cite the design (node_modules, dist and build are not ours). */
const CODE_DIRS = ['bin', 'cli', 'fs', 'store', 'src', 'native', 'scripts', 'test'];
const CODE_FILE = /\.(ts|js|cc|c|h|sh|py|go)$|^chunkfs$/;

function codeFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...codeFiles(full));
    else if (CODE_FILE.test(entry.name)) out.push(full);
  }
  return out;
}

/** The numbers of docs/design.md's sections (`## N. Title`). */
function designSections(design: string): Set<string> {
  return new Set([...design.matchAll(/^## (\d+)\. /gm)].map((m) => m[1]));
}

/** Every "DESIGN §N" (or "DESIGN.md §N") in text: the section numbers, with their line numbers. */
function designCitations(text: string): Array<{ section: string; line: number }> {
  const out: Array<{ section: string; line: number }> = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/DESIGN(?:\.md)? §(\d+)/g)) out.push({ section: m[1], line: i + 1 });
  });
  return out;
}

test('every DESIGN §N the code and docs cite is a section of docs/design.md', (t) => {
  const sections = designSections(fs.readFileSync(path.join(REPO_ROOT, 'docs/design.md'), 'utf8'));
  const files = [
    ...CODE_DIRS.flatMap((d) => codeFiles(path.join(REPO_ROOT, d))),
    ...FILES.map((f) => path.join(REPO_ROOT, f)),
  ];
  let citations = 0;
  for (const file of files) {
    for (const c of designCitations(fs.readFileSync(file, 'utf8'))) {
      citations++;
      t.true(
        sections.has(c.section),
        `${path.relative(REPO_ROOT, file)}:${c.line} cites DESIGN §${c.section}, not a section of docs/design.md`,
      );
    }
  }
  t.true(citations >= 100, `found ${citations} citations`);
});

test('the design citation check sees a missing section', (t) => {
  const sections = designSections('## 1. One\ntext\n## 3. Three\n### 2. not a section\n');
  t.deepEqual([...sections], ['1', '3']);
  const cited = designCitations('x // DESIGN §2, DESIGN.md §3\n/* DESIGN §10 */');
  t.deepEqual(
    cited.map((c) => c.section),
    ['2', '3', '10'],
  );
  t.false(cited.every((c) => sections.has(c.section)));
});

test('every docs/*.md the code cites exists', (t) => {
  let cited = 0;
  for (const file of CODE_DIRS.flatMap((d) => codeFiles(path.join(REPO_ROOT, d)))) {
    // "docs/NAME.md" or a bare "NAME.md" (lowercase names: README.md and DESIGN.md are cited by name elsewhere).
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/(?<![\w/.-])(?:docs\/)?([a-z][a-z0-9-]*\.md)\b/g)) {
      cited++;
      t.true(
        fs.existsSync(path.join(REPO_ROOT, 'docs', m[1])),
        `${path.relative(REPO_ROOT, file)} cites ${m[0]}, not in docs/`,
      );
    }
  }
  t.true(cited >= 10, `found ${cited} citations`);
});

/** Production code and the scripts that measure and check it (tests may keep their history). */
const PRODUCT_DIRS = ['bin', 'cli', 'fs', 'store', 'src', 'native', 'scripts'];

/** "issue N" in text: a reference a reader of the repository cannot follow (no issue text is here). */
function issueCitations(text: string): number[] {
  const out: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (/\bissues? \d+/i.test(line)) out.push(i + 1);
  });
  return out;
}

test('production code cites design sections, never issue numbers', (t) => {
  t.deepEqual(issueCitations('a\n// fixed (issue 12)\n// DESIGN §5\n'), [2], 'the check sees one');
  for (const file of PRODUCT_DIRS.flatMap((d) => codeFiles(path.join(REPO_ROOT, d)))) {
    for (const line of issueCitations(fs.readFileSync(file, 'utf8'))) {
      t.fail(`${path.relative(REPO_ROOT, file)}:${line} cites an issue number: cite the design section instead`);
    }
  }
  t.pass();
});
