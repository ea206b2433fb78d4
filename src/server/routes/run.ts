// A resolved request's prompts handed to the pipeline: one generation per prompt, with the
// server's metrics, every prompt's events merged as they come.
import { setMaxListeners } from 'node:events';
import type { ServerContext } from '../context.js';
import { runPrompt as runPipelinePrompt } from '../../pipeline/generate.js';
import type { CompletionEvent, GenerationSummary, RunOptions } from '../../pipeline/generate.js';
import type { ResolvedRequest } from '../../pipeline/request.js';
import { mergeAsync } from '../merge.js';

export { engineId, newSummary } from '../../pipeline/generate.js';

export function runPrompt(ctx: ServerContext, r: ResolvedRequest, i: number, signal: AbortSignal, summary: GenerationSummary, opts: Omit<RunOptions, 'observer'> = {}): AsyncGenerator<CompletionEvent> {
  return runPipelinePrompt(ctx, r, i, signal, summary, { ...opts, observer: ctx.metrics.observer(r.prompts[i]!.params) });
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
