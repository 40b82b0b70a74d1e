// The leak scan's findings as lines for scrub and fsck (DESIGN §4 "Identity"; store/upkeep/leak-scan.ts):
// files the metadata proves freed (removable, into each disk's quarantine), files it does not
// (unknown: never removed), a removal refused past the share limit, and quarantine emptied.
import type { LeakReport } from '../store/upkeep/leak-scan';

export function leakLines(r: LeakReport, repair: boolean): string[] {
  const out: string[] = [];
  const leaked = r.leakedShards + r.leakedTemps;
  if (r.refused !== null) out.push(`leak scan: ${r.refused}`);
  if (r.unknown > 0) {
    out.push(
      `${r.unknown} shard or temp file(s) that the metadata neither names nor proves freed, left in place ` +
        `(is the metadata older than the disks, or not this store's?): ${r.unknownPaths.join(', ')}`,
    );
  }
  const unknown = new Set(r.unknownPaths);
  const freed = r.paths.filter((p) => !unknown.has(p));
  if (leaked > 0 && !repair) {
    out.push(
      `${leaked} file(s) the metadata proves freed (run with --repair to move them to each disk's quarantine): ` +
        freed.join(', '),
    );
  }
  if (r.removed > 0) {
    out.push(
      `moved ${r.removed} freed file(s) into ${r.quarantine}/ on their disks; to undo, move that folder's .chunks ` +
        'tree back (docs/operations.md, "Quarantine"); it is deleted once past the store\'s quarantineGraceDays',
    );
  }
  if (r.quarantineEmptied > 0) {
    out.push(`deleted ${r.quarantineEmptied} file(s) from quarantine folders past their grace period`);
  }
  return out;
}

/** Whether the leak scan left anything that needs the operator. */
export function leaksUnresolved(r: LeakReport, repair: boolean): boolean {
  const leaked = r.leakedShards + r.leakedTemps;
  return r.unknown > 0 || r.refused !== null || (repair ? r.removed < leaked : leaked > 0);
}
