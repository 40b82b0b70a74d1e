import test from 'ava';
import { smallStore } from './helpers';

for (const layout of ['replica:3', 'ec:4+2']) {
  test(`write/read round trip ${layout}`, async (t) => {
    const { store } = await smallStore(layout);
    const a = store.ns.create(1, 'f', 0o644, 0, 0);
    const data = Buffer.alloc(600 * 1024);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff;
    await store.write(a.ino, 1000, data);
    const back = await store.read(a.ino, 1000, data.length);
    t.true(back.equals(data));
    await store.write(a.ino, 5000, Buffer.from('hello'));
    data.write('hello', 4000);
    t.true((await store.read(a.ino, 1000, data.length)).equals(data));
    t.is(store.ns.getattr(a.ino)!.sizeBytes, 1000 + data.length);
    t.true((await store.read(a.ino, 0, 1000)).equals(Buffer.alloc(1000)));
    await store.close();
  });
}
