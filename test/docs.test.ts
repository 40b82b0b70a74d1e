// Every relative link in README.md and docs/*.md resolves (issue 11): the file exists, and a
// #fragment names a heading of that file (GitHub's anchor rule: lowercase, punctuation dropped,
// spaces to dashes).
import test from 'ava'
import * as fs from 'node:fs'
import * as path from 'node:path'
import { REPO_ROOT } from './helpers/root'

function anchors (markdown: string): Set<string> {
  const out = new Set<string>()
  for (const line of markdown.split('\n')) {
    const m = /^#{1,6}\s+(.*)$/.exec(line)
    if (m !== null) out.add(m[1].trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-'))
  }
  return out
}

const FILES = ['README.md', ...fs.readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

test('relative links in README.md and docs/ resolve to files and headings', (t) => {
  let links = 0
  for (const file of FILES) {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8')
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]
      if (/^[a-z]+:/.test(target)) continue // http:, mailto:
      links++
      const [rel, fragment] = target.split('#')
      const resolved = rel === '' ? path.join(REPO_ROOT, file) : path.join(REPO_ROOT, path.dirname(file), rel)
      t.true(fs.existsSync(resolved), `${file}: ${target} -> ${resolved} does not exist`)
      if (fragment !== undefined && fs.existsSync(resolved)) {
        t.true(anchors(fs.readFileSync(resolved, 'utf8')).has(fragment), `${file}: #${fragment} is not a heading of ${rel || file}`)
      }
    }
  }
  t.true(links >= 8, `found ${links} links`)
})
