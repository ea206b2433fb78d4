import type { ServerContext } from '../context.js';
import { HttpError } from '../errors.js';

/** Counts a request in flight, or refuses it: 503 while the engine is down, 429 when the queue is full. */
export function admit(ctx: ServerContext): () => void {
  if (!ctx.engine.healthy) throw new HttpError(503, 'the engine is not running', 'server_error', null, 'engine_unavailable');
  if (ctx.inFlight >= ctx.options.maxPendingRequests) {
    throw new HttpError(429, `too many requests in flight (${ctx.inFlight}); retry later`, 'rate_limit_error', null, 'queue_full');
  }
  ctx.inFlight++;
  let released = false;
  return () => {
    if (!released) ctx.inFlight--;
    released = true;
  };
}
