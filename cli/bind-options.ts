// The options of a second mount of a store already mounted here, which becomes a bind of the first
// mount (cli/store-bind.ts). A bind shares the first mount's server, so every option the server runs
// with (transport, buffer, atime, ACLs, ...) is the first mount's: one the second mount names must
// match it, or the mount is refused naming it. ro/rw, suid/nosuid and dev/nodev are per mount
// point, which a bind sets for itself (mount -o remount,bind); rw is refused only when chunkfs
// itself serves the store read-only (-o ro on the first mount). Pure.
import type { MountCliOptions } from './cli-args';

/** Each option as `mount -o` spells it, by what it sets (JSON: a live mount reports its own). */
export type OptionTexts = Record<string, string>;

const MIB = 1 << 20;

/** The options o names, spelled as -o takes them; options it leaves out are absent. */
export function optionTexts(o: MountCliOptions): OptionTexts {
  const t: OptionTexts = {};
  if (o.transport !== undefined) t.transport = `transport=${o.transport}`;
  if (o.bufferBytesMax !== undefined) t.buffer = `buffer_mb=${Math.round(o.bufferBytesMax / MIB)}`;
  if (o.flushDelayMs !== undefined) t.flush = `flush_ms=${o.flushDelayMs}`;
  if (o.allowOther !== undefined) t.allowOther = o.allowOther ? 'allow_other' : 'noallow_other';
  if (o.writebackCache !== undefined) t.writebackCache = o.writebackCache ? 'writeback_cache' : 'nowriteback_cache';
  if (o.spinUs !== undefined) t.spin = `spin_us=${o.spinUs}`;
  if (o.atime !== undefined) t.atime = o.atime;
  if (o.acl !== undefined) t.acl = o.acl ? 'acl' : 'noacl';
  if (o.keyFile !== undefined) t.keyFile = `keyfile=${o.keyFile}`;
  if (o.leaseMs !== undefined) t.leaseMs = `lease_ms=${o.leaseMs}`;
  if (o.debug === true) t.debug = 'debug';
  if (o.metrics !== undefined) t.metrics = `metrics=${o.metrics.host}:${o.metrics.port}`;
  if (o.readOnly !== undefined) t.readOnly = o.readOnly ? 'ro' : 'rw';
  if (o.suid !== undefined) t.suid = o.suid ? 'suid' : 'nosuid';
  if (o.dev !== undefined) t.dev = o.dev ? 'dev' : 'nodev';
  return t;
}

/** Set per mount point by the bind itself. */
const PER_MOUNT = new Set(['readOnly', 'suid', 'dev']);

/**
 * What the second mount asks (its named options) that a bind of a mount served with `served` cannot
 * give, each as "OPTION (the live mount runs X)"; empty when it can be a bind.
 */
export function bindConflicts(asked: OptionTexts, served: OptionTexts): string[] {
  const out: string[] = [];
  for (const [key, text] of Object.entries(asked)) {
    if (key === 'readOnly') {
      if (text === 'rw' && served.readOnly === 'ro') out.push('rw (the live mount is served read-only: -o ro)');
    } else if (!PER_MOUNT.has(key) && served[key] !== text) {
      out.push(`${text} (the live mount runs ${served[key] ?? 'without it'})`);
    }
  }
  return out;
}

/** The per-mount flags of the bind: as asked, else as the first mount has them. */
export function bindFlags(asked: OptionTexts, served: OptionTexts): string[] {
  return [
    asked.readOnly ?? served.readOnly ?? 'rw',
    asked.suid ?? served.suid ?? 'nosuid',
    asked.dev ?? served.dev ?? 'nodev',
  ];
}
