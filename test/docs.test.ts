// The docs hold what the code points at: every relative link in README.md and docs/*.md resolves
// (the file exists, and a #fragment names a heading of that file: GitHub's anchor rule, lowercase,
// punctuation dropped, spaces to dashes), and every "DESIGN §N" a source file cites names a section
// of docs/design.md (DESIGN §2 is about this: the design is written down where the code cites it), and
// no file a reader reads (code, tests, scripts, README, docs) cites an issue number: a reader has no issues.
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

/** Everything a reader of the repository reads: the code and tests, the docs and README, the xfstests table. */
function readerFiles(): string[] {
  return [
    ...CODE_DIRS.flatMap((d) => codeFiles(path.join(REPO_ROOT, d))),
    ...FILES.map((f) => path.join(REPO_ROOT, f)),
    path.join(REPO_ROOT, 'docs/xfstests.csv'),
  ];
}

/**
 * Lines citing an issue ("issue N", "issues N, M", "issue #N", also across a comment's line break, and
 * the possessive of "the issue"): a reference a reader of the repository cannot follow (no issue text is here).
 */
function issueCitations(text: string): number[] {
  const lines = new Set<number>();
  for (const m of text.matchAll(/\bissues?(?:\s|\/\/|[*#])*\d+|\bthe issue's\b/gi)) {
    lines.add(text.slice(0, m.index).split('\n').length);
  }
  return [...lines];
}

test('the issue citation check sees each form', (t) => {
  const issue = 'Issue'; // spelled apart, so this file does not cite one itself
  const planted = [
    'a', // 1
    `// fixed (${issue} 12)`, // 2
    '// DESIGN §5, fault #2, the writes issue no flush', // 3
    `# see ${issue.toLowerCase()}s 20, 23`, // 4
    `// the ${issue.toLowerCase()}`, // 5
    '// 22 item 4', // 6
    `  target of ${issue.toLowerCase()} #7`, // 7
    `the ${issue.toLowerCase()}'s bound`, // 8
  ].join('\n');
  t.deepEqual(issueCitations(planted), [2, 4, 5, 7, 8]);
});

test('code, tests, scripts, README and docs cite design sections, never issue numbers', (t) => {
  const files = readerFiles();
  const found = files.flatMap((file) =>
    issueCitations(fs.readFileSync(file, 'utf8')).map((line) => `${path.relative(REPO_ROOT, file)}:${line}`),
  );
  t.deepEqual(found, [], 'these lines cite an issue: cite the design or spec section, or say the rule');
  t.true(files.length >= 300, `scanned ${files.length} files`);
});
