// Admission counts sequences (prompts × n), the unit that takes KV cache and engine slots:
// 503 while the engine is down, 429 with Retry-After when the pending budget is spent, and a
// 400 for one request larger than the whole budget. An n above --max-num-seqs is admitted:
// the engine runs its sequences in turns, as vLLM does.
import type { FastifyReply } from 'fastify';
import type { ServerContext } from '../context.js';
import { HttpError } from '../errors.js';

/** seconds a refused client is asked to wait: about what a short request takes */
const RETRY_AFTER_S = 1;

/** Counts a request's sequences in flight (release them with the returned function), or refuses it. */
export function admit(ctx: ServerContext, reply: FastifyReply, prompts: readonly { readonly params: { readonly n: number } }[]): () => void {
  if (!ctx.engine.healthy) {
    void reply.header('retry-after', String(RETRY_AFTER_S));
    throw new HttpError(503, 'the engine is not running', 'server_error', null, 'engine_unavailable');
  }
  const sequences = prompts.reduce((sum, p) => sum + p.params.n, 0);
  const max = ctx.options.maxPendingRequests;
  if (sequences > max) {
    throw new HttpError(400, `this request asks for ${sequences} sequences (prompts × n), more than this server admits at once (--max-pending-requests ${max})`, 'invalid_request_error', 'n');
  }
  if (ctx.inFlight + sequences > max) {
    void reply.header('retry-after', String(RETRY_AFTER_S));
    throw new HttpError(429, `too many sequences in flight (${ctx.inFlight} of ${max}); retry later`, 'rate_limit_error', null, 'queue_full');
  }
  ctx.inFlight += sequences;
  let released = false;
  return () => {
    if (!released) ctx.inFlight -= sequences;
    released = true;
  };
}
