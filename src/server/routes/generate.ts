// POST /generate: LMDeploy's native endpoint (prompt or input_ids in; text, output_ids and
// meta_info out), streaming incremental chunks or whole.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { checkTokenIds, requestId, resolveMaxTokens, samplingParams, stopStrings } from '../context.js';
import { toOpenAIError } from '../errors.js';
import { generate } from '../generation.js';
import type { CompletionEvent, GenerationSummary } from '../generation.js';
import { generateBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { admit } from './admission.js';
import { jsonLogprob } from './format.js';

interface GenerateBody {
  prompt?: string;
  input_ids?: number[];
  max_tokens?: number;
  stop?: string | string[] | null;
  stop_token_ids?: number[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  ignore_eos?: boolean;
  skip_special_tokens?: boolean;
  return_logprob?: boolean;
  stream?: boolean;
  seed?: number;
}

export function generateRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: GenerateBody }>('/generate', { schema: { body: generateBody } }, async (req, reply) => {
    const body = req.body;
    const promptIds = body.input_ids ?? ctx.tokenizer.encode(body.prompt ?? '', { addSpecial: true });
    checkTokenIds(ctx, promptIds, 'input_ids');
    const maxTokens = resolveMaxTokens(ctx, promptIds.length, body.max_tokens);
    const release = admit(ctx);
    const summary: GenerationSummary = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, firstScheduledTime: undefined };
    const events = generate(
      ctx.engine,
      ctx.tokenizer,
      {
        id: requestId('gen'),
        promptIds,
        params: samplingParams(body, maxTokens, body.return_logprob ? 0 : null),
        stop: stopStrings(body.stop),
        skipSpecialTokens: body.skip_special_tokens ?? true,
        signal: disconnectSignal(reply),
      },
      summary,
      ctx.metrics.observer(),
    );
    const piece = (e: CompletionEvent, finished: boolean) => ({
      text: e.text,
      output_ids: e.tokenIds,
      meta_info: {
        prompt_tokens: summary.promptTokens,
        completion_tokens: summary.completionTokens,
        finish_reason: finished && e.finishReason ? { type: e.finishReason, ...(e.stopReason !== undefined && { matched: e.stopReason }) } : null,
        ...(body.return_logprob && { output_token_logprobs: (e.logprobs ?? []).map((lp) => [jsonLogprob(lp.logprob), lp.id]) }),
      },
    });
    try {
      if (body.stream) {
        const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
        let sent = 0;
        await runStream(
          sse,
          async () => {
            for await (const e of events) {
              sent += e.tokenIds.length;
              await sse.send({ ...piece(e, true), meta_info: { ...piece(e, true).meta_info, completion_tokens: sent } });
            }
          },
          (err) => toOpenAIError(err).body,
        );
        return reply;
      }
      let text = '';
      const ids: number[] = [];
      const logprobs: [number, number][] = [];
      let last: CompletionEvent | undefined;
      for await (const e of events) {
        text += e.text;
        ids.push(...e.tokenIds);
        for (const lp of e.logprobs ?? []) logprobs.push([jsonLogprob(lp.logprob), lp.id]);
        last = e;
      }
      const meta = piece(last ?? { index: 0, text: '', tokenIds: [] }, true).meta_info;
      return { text, output_ids: ids, meta_info: { ...meta, ...(body.return_logprob && { output_token_logprobs: logprobs }) } };
    } finally {
      release();
    }
  });
}
