// PostgreSQL's schema (DESIGN §9 "Engines"): schema.sql beside this file, the whole current schema a new
// store gets, and migrations.ts, which take a store made by an older build to it.
import { EngineSchema } from '../sql-engine';
import { schemaFileOf } from '../schema-file';
import { MIGRATIONS } from './migrations';

export const POSTGRES_SCHEMA: EngineSchema = { file: schemaFileOf(__dirname), migrations: MIGRATIONS };
