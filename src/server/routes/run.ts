// A resolved request's prompts handed to the engine: one generation per prompt, each
// registered (for /abort_request) while the engine has it, with the server's metrics.
import { setMaxListeners } from 'node:events';
import type { ServerContext } from '../context.js';
import { generate } from '../generation.js';
import type { CompletionEvent, GenerationSummary } from '../generation.js';
import { mergeAsync } from '../merge.js';
import type { ResolvedRequest } from '../request.js';

export const newSummary = (): GenerationSummary => ({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, firstScheduledTime: undefined });

/** The engine's id of prompt i (a single prompt keeps the request's id). */
export const engineId = (r: ResolvedRequest, i: number): string => (r.prompts.length > 1 ? `${r.id}-${i}` : r.id);

export function runPrompt(ctx: ServerContext, r: ResolvedRequest, i: number, signal: AbortSignal, summary: GenerationSummary): AsyncGenerator<CompletionEvent> {
  const p = r.prompts[i]!;
  return generate(
    ctx.engine,
    ctx.tokenizer,
    {
      id: engineId(r, i),
      promptIds: p.ids,
      params: p.params,
      stop: r.stop,
      includeStopStrInOutput: r.includeStopStrInOutput,
      skipSpecialTokens: r.skipSpecialTokens,
      signal,
      registry: ctx.requests,
    },
    summary,
    ctx.metrics.observer(p.params),
  );
}

/** Every prompt's events as they come, tagged with the prompt's index. */
export function runAll(ctx: ServerContext, r: ResolvedRequest, signal: AbortSignal, summaries: GenerationSummary[]): AsyncGenerator<[number, CompletionEvent]> {
  // each prompt's generation listens for the client leaving: not a leak, however many
  if (r.prompts.length > 1) setMaxListeners(r.prompts.length + 10, signal);
  return mergeAsync(r.prompts.map((_, i) => tagged(i, runPrompt(ctx, r, i, signal, summaries[i]!))));
}

async function* tagged<T>(tag: number, source: AsyncIterable<T>): AsyncGenerator<[number, T]> {
  for await (const value of source) yield [tag, value];
}
