// Human-readable `chunkfs status` (no raw JSON in the text): pure formatting of the status
// report (cli/actions/status.ts, as JSON values). Fields it does not know are still printed, one
// line each, so a newer report never hides information.
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };
const LINES_MAX = 10_000;
/** A field the metadata database holds, while its server is unreachable (never printed as a zero). */
const UNKNOWN = 'unknown (metadata unreachable)';
const KNOWN = new Set([
  'store',
  'mount',
  'disks',
  'layoutsInUse',
  'transformedChunks',
  'healQueueLength',
  'openIntents',
  'intentBacklog',
  'reclaimBacklog',
  'metadataFlushes',
  'groupsClosed',
  'compaction',
  'counters',
  'faults',
  'metadata',
]);

export function bytesText(n: Json | undefined): string {
  const v = Number(n);
  if (!Number.isFinite(v)) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let x = v;
  let u = 0;
  while (x >= 1024 && u < units.length - 1) {
    x /= 1024;
    u++;
  }
  return `${u === 0 ? x : x.toFixed(1)} ${units[u]}`;
}

/** A count, or UNKNOWN when null. */
function known(v: Json | undefined, text: (n: number) => string): string {
  return v === null ? UNKNOWN : text(Number(v ?? 0));
}

function isObj(v: Json | undefined): v is Obj {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
}

function scalar(v: Json): string {
  if (Array.isArray(v))
    return v
      .map((x) =>
        isObj(x)
          ? Object.entries(x)
              .map(([k, y]) => `${k}=${scalar(y)}`)
              .join(' ')
          : scalar(x),
      )
      .join(', ');
  if (isObj(v))
    return Object.entries(v)
      .map(([k, y]) => `${k} ${scalar(y)}`)
      .join(', ');
  return String(v);
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function diskLines(disks: Json[]): string[] {
  const out = [`disks: ${disks.length}`];
  for (const d of disks) {
    if (!isObj(d)) continue;
    const used = Number(d.totalBytes) - Number(d.freeBytes);
    const errors = Number(d.errors) > 0 ? `  ${plural(Number(d.errors), 'error')}` : '';
    // An offline disk's space is not looked at (its path may be an empty mount point elsewhere).
    const space = Number(d.totalBytes) > 0 ? `${bytesText(used)} used of ${bytesText(d.totalBytes)}` : 'space unknown';
    out.push(
      `  ${String(d.id ?? '?').padStart(3)}  ${String(d.state ?? '?').padEnd(8)} ${space}  ${String(d.path ?? '')}${errors}`,
    );
    // Why a disk is not ok (offline: missing directory, no or foreign identity marker, injected).
    if ((d.state ?? 'ok') !== 'ok' && typeof d.lastError === 'string' && d.lastError !== '')
      out.push(`       ${d.lastError}`);
  }
  return out;
}

/** DESIGN §5: what the log holds that the shards do not yet, against its bounds, and the applier's pace. */
function backlogLine(b: Obj): string {
  const err = String(b.lastError ?? '') === '' ? '' : `; last error: ${String(b.lastError)}`;
  return (
    `intent log: ${plural(Number(b.intents ?? 0), 'intent')} (${bytesText(b.bytes)}) waiting to be applied, bound ${String(b.intentsMax ?? '?')} intents / ${bytesText(b.bytesMax)}; ` +
    `applied ${String(b.appliedIntents ?? 0)} (${bytesText(b.appliedBytes)}) in ${plural(Number(b.appliedChunks ?? 0), 'chunk write')} since open, ${bytesText(b.rateBytesPerSec)}/s${err}`
  );
}

export function faultText(f: Obj): string {
  const what =
    f.kind === 'latency'
      ? `latency +${String(f.latencyMs)} ms`
      : f.kind === 'offline'
        ? 'offline'
        : String(f.kind).toUpperCase();
  const left: string[] = [];
  if (typeof f.remainingCount === 'number') left.push(`${f.remainingCount} op(s) left`);
  if (typeof f.remainingMs === 'number') left.push(`${Math.ceil(f.remainingMs / 1000)} s left`);
  const ops = f.kind === 'offline' ? '' : ` on ${String(f.ops) === 'all' ? 'all' : String(f.ops)} ops`;
  return `#${String(f.id)} disk ${String(f.diskId)}: ${what}${ops}, ${plural(Number(f.hits), 'hit')}${left.length > 0 ? `, ${left.join(', ')}` : ', until cleared'}`;
}

/** Reads the transport answered in C from read grants (fs/fuse/read-grants.ts). */
function grantLine(g: Obj): string {
  return (
    `read grants: ${plural(Number(g.servedReads), 'read')} answered without JavaScript, ${plural(Number(g.failedReads), 'failed read')} handed back, ` +
    `${plural(Number(g.grantedChunks), 'chunk')} granted now`
  );
}

/** The mount process's memory, and how much of it the write-back buffer holds (-o buffer_mb bounds it). */
function memoryLine(m: Obj): string {
  return (
    `memory: ${bytesText(m.rssBytes)} resident (JavaScript heap ${bytesText(m.heapUsedBytes)}, outside it ${bytesText(m.externalBytes)}); ` +
    `write-back buffer ${bytesText(m.writeBufferBytes)} buffered in ${bytesText(m.writeBufferHeldBytes)} held, bound ${bytesText(m.writeBufferMaxBytes)}`
  );
}

// A mount that lost the lease says so first: it changes nothing more (DESIGN §9 "Lease and fencing").
function leaseLostText(m: Obj): string {
  return typeof m.leaseLost === 'string'
    ? `; THIS MOUNT LOST THE LEASE (${m.leaseLost}): read-only, every change refused (EROFS); unmount it`
    : '';
}

/**
 * Reconnections after the connection broke (DESIGN §9 "A broken connection"), and crashes of the
 * metadata: failures after operations were answered (DESIGN §9 "PostgreSQL round trips").
 */
function reconnectsText(m: Obj): string {
  const crashes = typeof m.crashes === 'number' ? `; meta_crashes: ${m.crashes}` : '';
  return typeof m.reconnects === 'number' ? `; meta_reconnects: ${m.reconnects}${crashes}` : '';
}

/** The metadata server down now (DESIGN §9 "A broken connection"): since when (UTC), why, the tries to dial again. */
export function outageText(o: Obj): string {
  const since = new Date(Number(o.sinceMs)).toISOString().slice(11, 19);
  const tries = o.reconnecting === true ? `, reconnecting (${plural(Number(o.attempts), 'attempt')})` : '';
  return `unreachable since ${since} UTC (${String(o.reason)})${tries}`;
}

/** DESIGN §9: where the metadata is; on PostgreSQL who holds the store's lease, and for how long. */
function metadataLine(m: Obj): string {
  const where = `metadata: ${String(m.engine ?? '?')} ${String(m.location ?? '')}`;
  if (isObj(m.unreachable)) return `${where}: ${outageText(m.unreachable)}${leaseLostText(m)}${reconnectsText(m)}`;
  if (m.leases !== true) return where; // an engine without a lease (SQLite: the store lock file)
  const lost = leaseLostText(m);
  const again = reconnectsText(m);
  const l = m.lease;
  if (!isObj(l)) return `${where}${lost}${again}; lease: not held`;
  const left = Number(l.expiresInMs);
  return (
    `${where}${lost}${again}; lease: ${String(l.host)} pid ${String(l.pid)} (${String(l.note)}), ` +
    `epoch ${String(l.epoch ?? 0)}, ` +
    `renewed ${(Number(l.heartbeatAgeMs) / 1000).toFixed(1)} s ago, ` +
    (left > 0 ? `expires in ${(left / 1000).toFixed(1)} s` : `expired ${(-left / 1000).toFixed(1)} s ago`)
  );
}

function layoutsText(layouts: Obj[]): string {
  if (layouts.length === 0) return 'none';
  return layouts.map((l) => `${String(l.layout)} (${plural(Number(l.files), 'file')})`).join(', ');
}

/** "compressed 12 chunks (48.0 MiB stored in 11.3 MiB, 4.25x)". */
function transformedText(t: Obj): string {
  const raw = Number(t.rawBytes);
  const stored = Number(t.storedBytes);
  const mib = (n: number): string => `${(n / 1048576).toFixed(1)} MiB`;
  return `${String(t.transforms)} ${plural(Number(t.chunks), 'chunk')} (${mib(raw)} stored in ${mib(stored)}, ${stored > 0 ? (raw / stored).toFixed(2) : '-'}x)`;
}

export function statusText(report: Json): string {
  const r: Obj = isObj(report) ? report : {};
  const out: string[] = [];
  const mount = r.mount;
  out.push(
    `store ${String(r.store ?? '?')}${isObj(mount) ? `, mounted on ${Array.isArray(mount.mountpoints) && mount.mountpoints.length > 1 ? mount.mountpoints.map(String).join(' and ') : String(mount.mountpoint)} (pid ${String(mount.pid)}${mount.readOnly === true ? ', read-only' : ''})` : ', not mounted'}`,
  );
  if (isObj(mount) && isObj(mount.memory)) out.push(memoryLine(mount.memory));
  if (isObj(mount) && isObj(mount.readGrants)) out.push(grantLine(mount.readGrants));
  out.push(...diskLines(Array.isArray(r.disks) ? r.disks : []));
  const layouts = Array.isArray(r.layoutsInUse) ? r.layoutsInUse.filter(isObj) : [];
  out.push(`layouts in use: ${r.layoutsInUse === null ? UNKNOWN : layoutsText(layouts)}`);
  const transformed = Array.isArray(r.transformedChunks) ? r.transformedChunks.filter(isObj) : [];
  if (transformed.length > 0) out.push(`transformed chunks: ${transformed.map(transformedText).join(', ')}`);
  out.push(
    `heal queue: ${known(r.healQueueLength, (n) => plural(n, 'shard'))}; ` +
      `reclaim backlog: ${known(r.reclaimBacklog, (n) => plural(n, 'chunk version'))}; ` +
      `open intents: ${known(r.openIntents, String)}; metadata flushes: ${String(r.metadataFlushes ?? 0)}; transaction groups closed: ${String(r.groupsClosed ?? 0)}`,
  );
  if (isObj(r.intentBacklog)) out.push(backlogLine(r.intentBacklog));
  if (isObj(r.metadata)) out.push(metadataLine(r.metadata));
  if (r.counters === null) out.push(`counters: ${UNKNOWN}`);
  if (isObj(r.counters))
    out.push(
      `counters: ${Object.entries(r.counters)
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(', ')}`,
    );
  const faults = Array.isArray(r.faults) ? r.faults.filter(isObj) : [];
  if (faults.length > 0) {
    out.push(`injected faults: ${faults.length}`);
    for (const f of faults) out.push(`  ${faultText(f)}`);
  }
  // The background compactor's errors (one log line a minute says them too; `chunkfs compact` reports its own).
  if (isObj(r.compaction) && Number(r.compaction.errors) > 0)
    out.push(`compaction errors since mount: ${String(r.compaction.errors)}; last: ${String(r.compaction.lastError)}`);
  for (const [k, v] of Object.entries(r)) {
    if (!KNOWN.has(k) && out.length < LINES_MAX) out.push(`${k}: ${v === null ? UNKNOWN : scalar(v)}`);
  }
  return out.join('\n') + '\n';
}
