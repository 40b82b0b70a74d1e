// A container's pack class (spec §11.1, DESIGN §5 "Small files") is the layout of the files packed
// into it. One open container per pack class; while open it is stored as Replica with its target's
// fault tolerance (ec:K+M -> replica:M+1) and without transforms, since appends patch it in place
// (spec §8.2); sealing rewrites it in the target layout, transforms and all (store/small/compactor.ts,
// DESIGN §10).
import { Layout, parseLayout, placementText } from '../../src/layout';

/** The layout an open container of this pack class is stored in. */
export function openLayoutOf(packClass: string): string {
  const l: Layout = parseLayout(packClass);
  return l.kind === 'ec' ? `replica:${l.m + 1}` : placementText(l);
}
