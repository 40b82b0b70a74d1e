// Every FUSE op's duration and result, for the mount's metrics (histograms of FUSE op
// latency, bytes read and written). Wraps an op table only when an observer is given: each op's
// reply callback (its first function argument) is timed from the request to the reply.
import type { ChunkfsOps } from './ops-table';

/** result: the reply's first argument (an errno, or for read/write the byte count or a negative errno). */
export type OpObserver = (op: string, seconds: number, result: unknown) => void;

type AnyFn = (...args: unknown[]) => unknown;

export function observeOps(ops: ChunkfsOps, observe: OpObserver): ChunkfsOps {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(ops)) {
    if (typeof fn !== 'function') {
      out[name] = fn;
      continue;
    }
    out[name] = (...args: unknown[]) => {
      const start = process.hrtime.bigint();
      const at = args.findIndex((a) => typeof a === 'function');
      if (at >= 0) {
        const reply = args[at] as AnyFn;
        args[at] = (...r: unknown[]) => {
          observe(name, Number(process.hrtime.bigint() - start) / 1e9, r[0]);
          return reply(...r);
        };
      }
      return (fn as AnyFn)(...args);
    };
  }
  return out as unknown as ChunkfsOps;
}
