// Schema v10 (DESIGN §10 "log records"): an intent row says whether its span is sealed (1: a log
// record of src/log-record-cipher.ts, for a chunk whose layout encrypts) or holds the bytes as they
// are (0: chunks that do not encrypt, and every row an older build wrote, which replays as before).
export const MIGRATION_V10_SEALED_SPANS = {
  sqlite: 'ALTER TABLE intents ADD COLUMN span_sealed INTEGER NOT NULL DEFAULT 0;',
  postgres: 'ALTER TABLE intents ADD COLUMN span_sealed BIGINT NOT NULL DEFAULT 0;',
};
