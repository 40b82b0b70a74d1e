// Schema v8 (DESIGN §10): a transformed chunk version's stored form, beside its raw
// length: stored_len = chunk_logical_len of its shards, stored_flags = spec §3.1 bits 1, 2.
// NULL / 0: stored raw (every chunk of a store made before transforms).
export const MIGRATION_V8_CHUNK_TRANSFORMS = {
  sqlite: `ALTER TABLE chunks ADD COLUMN stored_len INTEGER;
   ALTER TABLE chunks ADD COLUMN stored_flags INTEGER NOT NULL DEFAULT 0;`,
  postgres: 'ALTER TABLE chunks ADD COLUMN stored_len BIGINT, ADD COLUMN stored_flags BIGINT NOT NULL DEFAULT 0;',
};
