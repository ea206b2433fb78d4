// POST /get_ppl: LMDeploy's perplexity endpoint (lmdeploy/serve/openai api_server get_ppl,
// PPLRequest/PPLResponse). {"input": text | token ids} → {"ppl": the mean cross-entropy loss
// of each token after the first given those before it}: what LMDeploy calls ppl (not its
// exponential). Text is encoded as the tokenizer does by default (BOS where the model wants
// one), no chat template. The numbers are vLLM's prompt_logprobs of the same ids, negated and
// averaged: one prefill with prompt logprobs, one token generated and dropped.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { HttpError } from '../errors.js';
import { resolveRequest } from '../../pipeline/request.js';
import { disconnectSignal } from '../sse.js';
import { admit } from './admission.js';
import { newSummary, runPrompt } from './run.js';

interface PplBody {
  input: string | number[];
}

const pplBody = {
  type: 'object',
  required: ['input'],
  properties: { input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'integer' } }] } },
} as const;

export function getPplRoute(app: FastifyInstance, ctx: ServerContext, errorHandler: Parameters<FastifyInstance['setErrorHandler']>[0]): void {
  app.post<{ Body: PplBody }>('/get_ppl', { schema: { body: pplBody }, errorHandler }, async (req, reply) => {
    const input = req.body.input;
    if (input.length === 0) throw new HttpError(400, 'Input must not be empty.', 'invalid_request_error', 'input');
    const r = await resolveRequest(ctx, {
      prompts: [input],
      promptParam: 'input',
      addSpecialTokens: true,
      parseSpecial: true,
      maxTokens: 1,
      maxTokensParam: 'max_tokens',
      defaultMaxTokens: 1,
      sampling: { temperature: 0, n: 1, logprobs: null, promptLogprobs: 0, ignoreEos: true },
      idPrefix: 'ppl',
    });
    const ids = r.prompts[0]!.ids;
    if (ids.length < 2) throw new HttpError(400, 'Input must have at least two tokens: the first has no loss.', 'invalid_request_error', 'input');
    const release = admit(ctx, reply, r.prompts);
    try {
      const summary = newSummary();
      for await (const _ of runPrompt(ctx, r, 0, disconnectSignal(reply), summary)) void _;
      const lps = summary.promptLogprobs?.logprobs;
      if (!lps || lps.length !== ids.length - 1) throw new HttpError(500, 'the engine returned no prompt logprobs', 'server_error');
      let loss = 0;
      for (const lp of lps) loss -= lp;
      return { ppl: loss / lps.length };
    } finally {
      release();
    }
  });
}
