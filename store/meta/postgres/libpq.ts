// The libpq binding (npm `libpq`: native, built by node-gyp against Debian's libpq-dev): the part of
// its API the PostgreSQL engine uses, typed here since the package ships no declarations. Its
// synchronous calls (connectSync, exec, prepare, execPrepared) hold the thread for one round trip
// (DESIGN §9; docs/postgres-driver.md).

/** What a statement's result is read through: the connection itself, or a copy of a pipelined one (pipeline.ts). */
export interface PgResult {
  ntuples(): number;
  nfields(): number;
  fname(column: number): string;
  ftype(column: number): number;
  getvalue(row: number, column: number): string;
  getisnull(row: number, column: number): boolean;
  cmdTuples(): string;
}

export interface LibpqConnection extends PgResult {
  connectSync(conninfo: string): void;
  finish(): void;
  exec(sql: string): void;
  prepare(name: string, sql: string, paramCount: number): void;
  execPrepared(name: string, values: Array<string | null>): void;
  resultStatus(): string;
  resultErrorMessage(): string;
  resultErrorFields(): unknown;
  errorMessage(): string;
  serverVersion(): number;
  /** PQTRANS_IDLE 0, ACTIVE 1, INTRANS 2, INERROR 3, UNKNOWN 4 (a bad connection). */
  transactionStatus(): number;
  // The asynchronous side (commit-point.ts): send, then read as the socket turns readable.
  sendQuery(sql: string): boolean;
  startReader(): void;
  stopReader(): void;
  consumeInput(): boolean;
  isBusy(): boolean;
  getResult(): boolean;
  on(event: 'readable', listener: () => void): void;
  // Pipeline mode (pipeline.ts): statements sent together, results read in order, blocking.
  enterPipelineMode(): boolean;
  exitPipelineMode(): boolean;
  pipelineSync(): boolean;
  sendQueryPrepared(name: string, values: Array<string | null>): boolean;
  removeListener(event: 'readable', listener: () => void): void;
}

type LibpqClass = new () => LibpqConnection;

/** A new, unconnected libpq connection. */
export function newLibpqConnection(): LibpqConnection {
  // Loaded on first use: a store on SQLite never loads the PostgreSQL client library.
  const Libpq = require('libpq') as LibpqClass;
  return new Libpq();
}
