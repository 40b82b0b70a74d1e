// Argument parsing shared by the verbs that work on a store: flags with or without a
// value, positionals, and the optional TARGET (store directory, mount point, or nothing for the
// default store). Pure: strings in, values out; every problem is a UsageError naming it.
import { UsageError } from './usage-error';

export type FlagSpec = Record<string, 'bool' | 'value'>;

export interface SplitArgs {
  flags: Map<string, string | true>;
  positionals: string[];
}

/** --flag, --flag VALUE and --flag=VALUE; anything else starting with '-' is an unknown option. */
export function splitArgs(verb: string, args: string[], spec: FlagSpec): SplitArgs {
  const flags = new Map<string, string | true>();
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('-') || a === '-') {
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    const kind = spec[name];
    if (kind === undefined) throw new UsageError(verb, `unknown option '${name}'`);
    if (flags.has(name)) throw new UsageError(verb, `${name} given twice`);
    if (kind === 'bool') {
      if (eq > 0) throw new UsageError(verb, `${name} takes no value`);
      flags.set(name, true);
      continue;
    }
    const value = eq > 0 ? a.slice(eq + 1) : args[++i];
    if (value === undefined || value === '') throw new UsageError(verb, `${name} needs a value`);
    flags.set(name, value);
  }
  return { flags, positionals };
}

export function flagValue(s: SplitArgs, name: string): string | undefined {
  const v = s.flags.get(name);
  return typeof v === 'string' ? v : undefined;
}

/** A whole number in [min, max]. */
export function wholeNumber(verb: string, what: string, text: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text)) throw new UsageError(verb, `${what}: '${text}' is not a whole number`);
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(verb, `${what}: ${text} is out of range ${min}..${max}`);
  return n;
}

const DURATION_RE = /^([0-9]+)(ms|s|m|h)$/;
const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION_MS_MAX = 7 * 24 * 3_600_000;

/** "500ms", "30s", "5m", "2h" -> milliseconds (at most a week). */
export function parseDuration(verb: string, flag: string, text: string): number {
  const m = DURATION_RE.exec(text);
  if (m === null) throw new UsageError(verb, `${flag}: '${text}' is not a duration (e.g. 500ms, 30s, 5m, 2h)`);
  const ms = Number(m[1]) * DURATION_UNIT_MS[m[2]];
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > DURATION_MS_MAX)
    throw new UsageError(verb, `${flag}: '${text}' is out of range (1ms..7 days)`);
  return ms;
}

/** At most one positional: the target. */
export function optionalTarget(verb: string, positionals: string[]): string | undefined {
  if (positionals.length > 1) throw new UsageError(verb, `unexpected argument '${positionals[1]}'`);
  return positionals[0];
}
