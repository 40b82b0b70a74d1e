// `chunkfs --version`: this build, the on-disk format it writes, and the Node.js it runs on.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/** dist/cli/verbs/version.js -> the repository's package.json. */
const PACKAGE_JSON = path.join(__dirname, '..', '..', '..', 'package.json');

export function versionText(): string {
  const pkg = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string };
  return `chunkfs ${pkg.version} (format RUSTFS-SPEC-CHUNK-001 v1; node ${process.version})\n`;
}
