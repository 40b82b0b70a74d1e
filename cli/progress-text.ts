// Progress as words: "42% 1.2 GiB of 2.9 GiB, 85.3 MiB/s, ETA 20 s" (pure; cli/progress.ts shows it).
import type { Progress } from './control/protocol';
import { bytesText } from './status-text';

export function durationText(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** By bytes when the work has a byte size (scrub), else by items (heal queue entries). */
export function progressText(p: Progress, elapsedMs: number): string {
  const byBytes = p.totalBytes > 0;
  const done = byBytes ? p.doneBytes : p.doneItems;
  const total = byBytes ? p.totalBytes : p.totalItems;
  const pct = total === 0 ? 100 : Math.floor((done * 100) / total);
  const perSec = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
  const amount = byBytes ? `${bytesText(done)} of ${bytesText(total)}` : `${done} of ${total}`;
  const rate = byBytes ? `${bytesText(perSec)}/s` : `${perSec.toFixed(1)}/s`;
  const eta = done >= total ? 'done' : perSec > 0 ? `ETA ${durationText((total - done) / perSec)}` : 'ETA ?';
  return `${pct}% ${amount}, ${rate}, ${eta}`;
}
