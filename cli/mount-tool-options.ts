// Mount options of the operating tools: -o debug (whole stacks in log lines), -o ro (the
// filesystem refuses every change; the store still heals), -o metrics=HOST:PORT (Prometheus text on
// that local HTTP port, off by default). Pure; cli/cli-args.ts asks here before calling an option unknown.
import { UsageError } from './usage-error';

export interface MountToolOptions {
  debug?: boolean;
  readOnly?: boolean;
  metrics?: { host: string; port: number };
}

export const MOUNT_TOOL_OPTIONS_TEXT = 'debug, ro, rw, metrics=HOST:PORT';

function metricsAddress(value: string | undefined): { host: string; port: number } {
  const m = value === undefined ? null : /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(value);
  const port = m === null ? NaN : Number(m[2]);
  // Port 0: any free port (the ready line names it).
  if (m === null || port > 65535)
    throw new UsageError('mount', `metrics=${value ?? ''}: give HOST:PORT, e.g. metrics=127.0.0.1:9464`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

/** The option's setting, or null when it is not one of these. */
export function parseMountToolOption(key: string, value: string | undefined): MountToolOptions | null {
  if (key === 'debug' && value === undefined) return { debug: true };
  if (key === 'ro' && value === undefined) return { readOnly: true };
  if (key === 'rw' && value === undefined) return { readOnly: false };
  if (key === 'metrics') return { metrics: metricsAddress(value) };
  return null;
}
