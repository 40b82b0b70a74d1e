// Plain intents of encrypting layouts are refused (DESIGN §10 "Log records"): every intent of a chunk
// whose layout encrypts, an intent row's span or an intent log file record's payload, is written
// sealed, so one that holds plain bytes was written by no build of this store: the metadata or the
// log was altered (or is another store's). Applying it would put unauthenticated bytes into an
// encrypted file, so replay refuses the open instead, naming the intent and its chunk.
import { ChunkfsError } from '../../src/errors';
import { ChunkRef } from './chunk-ref';

/** Where a refused intent was found: a row of meta.db's intents table, or a record of the intent log file. */
export type IntentPlace = { row: number } | { logRecord: bigint; logPath: string };

export class PlainIntentError extends ChunkfsError {
  readonly code = 'EINVAL';
  constructor(place: IntentPlace, ref: ChunkRef) {
    const what = 'row' in place ? `intent row ${place.row} of meta.db` : `intent log record ${place.logRecord}`;
    const todo =
      'row' in place
        ? "restore the metadata from a copy of this store's, or delete that intent row (its write is lost)"
        : `restore ${place.logPath} from a copy of this store's`;
    const site = { fileId: ref.fileId, chunkIndex: BigInt(ref.chunkIndex), version: ref.version };
    super(`${what} holds plain bytes for a chunk whose layout encrypts (refused, not applied): ${todo}`, site);
  }
}

/** Throws PlainIntentError when a plain (unsealed) intent goes over ref, whose layout encrypts. */
export function refusePlainIntent(ref: ChunkRef, sealed: boolean, place: IntentPlace): void {
  if (!sealed && ref.fl.layout.transforms.encryption !== null) throw new PlainIntentError(place, ref);
}
