// The crash model of FaultyIo itself: only fsynced bytes and dir-fsynced names survive.
import test from 'ava';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NodeIo } from '../../store/io/io';
import { CrashedError, FaultyIo } from '../../store/io/faulty-io';
import { tmpDir as storeTmpDir } from './helpers';

/** Removed when this file ends (helpers' after.always). */
function tmpDir(): string {
  return storeTmpDir('chunkfs-fio-');
}

test('unsynced writes and unsynced creates vanish at crash', async (t) => {
  const dir = tmpDir();
  const io = new FaultyIo(new NodeIo());
  const a = path.join(dir, 'a');
  const f = await io.open(a, 'create-exclusive');
  await f.pwrite(Buffer.from('hello'), 0);
  await f.fsync();
  await f.close();
  // file data durable, but the directory entry is not: the file disappears.
  io.crash();
  t.false(fs.existsSync(a));
  await t.throwsAsync(io.open(a, 'read'), { instanceOf: CrashedError });
});

test('fsync + fsyncDir make a file durable; later unsynced writes are lost', async (t) => {
  const dir = tmpDir();
  const io = new FaultyIo(new NodeIo());
  const a = path.join(dir, 'a');
  const f = await io.open(a, 'create-exclusive');
  await f.pwrite(Buffer.alloc(8192, 1), 0);
  await f.fsync();
  await io.fsyncDir(dir);
  await f.pwrite(Buffer.alloc(100, 2), 10);
  await f.close();
  t.is(fs.readFileSync(a)[10], 2);
  io.crash();
  t.deepEqual(fs.readFileSync(a), Buffer.alloc(8192, 1));
});

test('rename not dir-fsynced is undone; dir-fsynced rename persists', async (t) => {
  const dir = tmpDir();
  fs.writeFileSync(path.join(dir, 'old'), 'OLD');
  fs.writeFileSync(path.join(dir, 'keep'), 'KEEP');
  const io = new FaultyIo(new NodeIo());
  await io.rename(path.join(dir, 'keep'), path.join(dir, 'kept'));
  await io.fsyncDir(dir);
  const tmp = path.join(dir, 'old.tmp');
  const f = await io.open(tmp, 'create-exclusive');
  await f.pwrite(Buffer.from('NEW'), 0);
  await f.fsync();
  await f.close();
  await io.rename(tmp, path.join(dir, 'old'));
  t.is(fs.readFileSync(path.join(dir, 'old'), 'utf8'), 'NEW');
  io.crash();
  t.is(fs.readFileSync(path.join(dir, 'old'), 'utf8'), 'OLD');
  t.false(fs.existsSync(tmp));
  t.is(fs.readFileSync(path.join(dir, 'kept'), 'utf8'), 'KEEP');
  t.false(fs.existsSync(path.join(dir, 'keep')));
});

test('torn crash keeps each 4 KiB page old or new', async (t) => {
  const dir = tmpDir();
  const a = path.join(dir, 'a');
  const pages = 64;
  fs.writeFileSync(a, Buffer.alloc(pages * 4096, 0xaa));
  const io = new FaultyIo(new NodeIo());
  const f = await io.open(a, 'readwrite');
  await f.pwrite(Buffer.alloc(pages * 4096, 0xbb), 0);
  io.crash({ torn: true, seed: 7 });
  const after = fs.readFileSync(a);
  t.is(after.length, pages * 4096);
  let oldPages = 0;
  for (let p = 0; p < pages; p++) {
    const page = after.subarray(p * 4096, (p + 1) * 4096);
    const isOld = page.equals(Buffer.alloc(4096, 0xaa));
    const isNew = page.equals(Buffer.alloc(4096, 0xbb));
    t.true(isOld || isNew, `page ${p} is neither old nor new`);
    if (isOld) oldPages++;
  }
  t.true(oldPages > 0 && oldPages < pages, 'a 64-page torn write keeps some of each');
});

test('faults: EIO by op and path, skip and count; crash before the n-th mutation', async (t) => {
  const dir = tmpDir();
  const io = new FaultyIo(new NodeIo());
  io.addFault({ op: 'fsync', path: 'bad', error: 'EIO', skip: 1, count: 1 });
  const bad = await io.open(path.join(dir, 'bad'), 'create-exclusive');
  await bad.fsync();
  await t.throwsAsync(bad.fsync(), { message: /EIO/ });
  await bad.fsync();
  io.addFault({ op: 'pwrite', error: 'ENOSPC' });
  await t.throwsAsync(bad.pwrite(Buffer.from('x'), 0), { message: /ENOSPC/ });
  io.clearFaults();

  const io2 = new FaultyIo(new NodeIo());
  const before = io2.mutationCount;
  io2.crashBeforeMutation(before + 2);
  const g = await io2.open(path.join(dir, 'g'), 'create-exclusive');
  await g.pwrite(Buffer.from('x'), 0);
  await t.throwsAsync(g.fsync(), { instanceOf: CrashedError });
  t.true(io2.isCrashed);
  t.false(fs.existsSync(path.join(dir, 'g')));
});

test('syncfs makes every file and name on its file system durable; a crash before it loses them', async (t) => {
  for (const crashFirst of [false, true]) {
    const dir = tmpDir();
    const io = new FaultyIo(new NodeIo());
    fs.mkdirSync(path.join(dir, 'sub'));
    const files = [path.join(dir, 'a'), path.join(dir, 'sub', 'b')];
    for (const p of files) {
      const f = await io.open(`${p}.tmp`, 'create-exclusive');
      await f.pwrite(Buffer.alloc(8192, 7), 0);
      await f.close();
      await io.rename(`${p}.tmp`, p);
    }
    if (crashFirst) io.crashBeforeSync(io.syncCount + 1);
    const synced = await io.syncfs([dir]).then(
      () => true,
      () => false,
    );
    t.is(synced, !crashFirst);
    io.crash();
    await io.whenRestored();
    for (const p of files) {
      t.is(fs.existsSync(p), !crashFirst, `${p}: its name kept only by the syncfs`);
      if (!crashFirst) t.deepEqual(fs.readFileSync(p), Buffer.alloc(8192, 7), `${p}: its bytes kept`);
      t.false(fs.existsSync(`${p}.tmp`));
    }
  }
});
