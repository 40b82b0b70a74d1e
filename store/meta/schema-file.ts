// An engine's schema.sql (DESIGN §9 "Engines"), read at run time: SQL is not compiled, so the file
// stays beside the engine's sources (store/meta/<engine>/schema.sql) and ships with them (the
// package ships its tracked files; dist/ is built on the machine). The compiled engine, in
// dist/store/meta/<engine>/, finds it through the package root above it.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Directories climbed from an engine's folder to the package root (store/meta/<engine> in dist/). */
const PACKAGE_DEPTH_MAX = 6;
const BUILD_DIR = 'dist';

/** The path of the schema.sql of the engine whose module lives in engineDir (its __dirname). */
export function schemaFileOf(engineDir: string): string {
  let root = engineDir;
  for (let i = 0; i <= PACKAGE_DEPTH_MAX && !fs.existsSync(path.join(root, 'package.json')); i++) {
    root = path.dirname(root);
  }
  const parts = path.relative(root, engineDir).split(path.sep);
  if (parts[0] === BUILD_DIR) parts.shift();
  return path.join(root, ...parts, 'schema.sql');
}

const texts = new Map<string, string>();

/** schema.sql's text, or an error saying the installation lacks it. */
export function schemaSql(file: string): string {
  let text = texts.get(file);
  if (text === undefined) {
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(
        `${file}: cannot read this build's metadata schema (${(err as Error).message}); reinstall chunkfs`,
      );
    }
    texts.set(file, text);
  }
  return text;
}
