// Human-readable `chunkfs status`: pure formatting of the store's status report (as JSON values).
// Unknown fields are printed generically so a newer report never hides information.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const LINES_MAX = 10_000;

function bytes(n: Json | undefined): string {
  const v = Number(n);
  if (!Number.isFinite(v)) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let x = v;
  let u = 0;
  while (x >= 1024 && u < units.length - 1) { x /= 1024; u++; }
  return `${u === 0 ? x : x.toFixed(1)} ${units[u]}`;
}

function flat(prefix: string, v: Json, out: string[]): void {
  if (out.length >= LINES_MAX) return;
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flat(prefix ? `${prefix}.${k}` : k, x, out);
  } else {
    out.push(`  ${prefix}: ${Array.isArray(v) ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') : String(v)}`);
  }
}

export function statusText(report: Json): string {
  const r = (report !== null && typeof report === 'object' && !Array.isArray(report)) ? report : {};
  const out: string[] = [];
  const disks = Array.isArray(r.disks) ? r.disks : [];
  out.push(`disks: ${disks.length}`);
  for (const d of disks) {
    if (d === null || typeof d !== 'object' || Array.isArray(d)) continue;
    const used = Number(d.totalBytes) - Number(d.freeBytes);
    out.push(`  ${String(d.id ?? '?')}  ${String(d.health ?? d.state ?? '?').padEnd(8)} ${bytes(used)} used of ${bytes(d.totalBytes)}  ${String(d.path ?? '')}`);
    // Why a disk is not ok (e.g. offline: missing directory, no or foreign identity marker).
    if ((d.state ?? 'ok') !== 'ok' && typeof d.lastError === 'string' && d.lastError !== '') out.push(`     ${d.lastError}`);
  }
  for (const [k, v] of Object.entries(r)) {
    if (k === 'disks') continue;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) { out.push(`${k}:`); flat('', v, out); }
    else out.push(`${k}: ${Array.isArray(v) ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') : String(v)}`);
  }
  return out.join('\n') + '\n';
}
