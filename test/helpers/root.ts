// Tests run from dist/test/...; find the repository root (the folder holding
// package.json) so testdata/ and scripts/ resolve the same from source or dist.
import * as fs from 'node:fs';
import * as path from 'node:path';

function findRoot(start: string): string {
  let dir = start;
  for (let depth = 0; depth < 10; depth++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error(`package.json not found above ${start}`);
}

export const REPO_ROOT = findRoot(__dirname);
export const TESTDATA = path.join(REPO_ROOT, 'testdata');
