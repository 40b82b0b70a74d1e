// A container's pack class (spec §11.1, DESIGN §5 "Small files") is the layout of the files packed
// into it. One open container per pack class; while open it is stored as Replica with its target's
// fault tolerance (ec:K+M -> replica:M+1), since appends patch it in place (spec §8.2), and without
// compression (an append would recompress the chunk); sealing rewrites it in the target layout,
// transforms and all (store/small/compactor.ts, DESIGN §10). Encryption stays on while it is open:
// a needle's bytes never reach a disk in the clear. An append to an encrypted chunk is a partial
// overwrite of a transformed chunk, so it becomes a new version of that chunk through the intent
// log (DESIGN §10: the intents of one applier round cost one rewrite).
import { Layout, parseLayout, placementText } from '../../src/layout';

/** The layout an open container of this pack class is stored in. */
export function openLayoutOf(packClass: string): string {
  const l: Layout = parseLayout(packClass);
  const placement = l.kind === 'ec' ? `replica:${l.m + 1}` : placementText(l);
  return l.transforms.encryption === null ? placement : `${placement},${l.transforms.encryption}`;
}
