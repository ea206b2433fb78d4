// The small endpoints: /v1/models, /tokenize, /detokenize, /health, /ready, /metrics,
// /reset_prefix_cache.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../errors.js';
import type { ServerContext } from '../context.js';
import { checkModel } from '../context.js';
import { chatPrompt } from '../openai-request.js';
import { checkTokenIds } from '../../pipeline/request.js';
import { detokenizeBody, tokenizeBody } from '../schemas.js';

interface TokenizeBody {
  model?: string;
  prompt?: string;
  messages?: { role: string; content: string | { type: 'text'; text: string }[] }[];
  add_special_tokens?: boolean;
  add_generation_prompt?: boolean;
  return_token_strs?: boolean | null;
}

export function miscRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const started = Math.floor(Date.now() / 1000);
  // vLLM's ModelCard, its permission list included (loom grants what vLLM does)
  const card = {
    id: ctx.options.servedModelName,
    object: 'model',
    created: started,
    owned_by: 'loom',
    root: ctx.options.modelRoot ?? ctx.options.servedModelName,
    parent: null,
    max_model_len: ctx.options.maxModelLen,
    permission: [
      {
        id: `modelperm-${randomUUID().replaceAll('-', '')}`,
        object: 'model_permission',
        created: started,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      },
    ],
  };
  app.get('/v1/models', async () => ({ object: 'list', data: [card] }));
  // the SDK's models.retrieve (vLLM has no such route: this is OpenAI's)
  app.get<{ Params: { id: string } }>('/v1/models/*', async (req) => {
    const id = (req.params as Record<string, string>)['*'] ?? '';
    if (decodeURIComponent(id) !== card.id) throw new HttpError(404, `The model \`${decodeURIComponent(id)}\` does not exist.`, 'invalid_request_error', 'model', 'model_not_found');
    return card;
  });

  app.post<{ Body: TokenizeBody }>('/tokenize', { schema: { body: tokenizeBody } }, async (req, reply) => {
    const body = req.body;
    checkModel(ctx, body.model);
    // the ids arrive as JSON text: a million of them are never a JS array on this thread
    const { json, count } = body.messages
      ? await ctx.text.encodeJson(await chatPrompt(ctx, body.messages, { addGenerationPrompt: body.add_generation_prompt ?? true }), { addSpecial: false, parseSpecial: true })
      : await ctx.text.encodeJson(body.prompt ?? '', { addSpecial: body.add_special_tokens ?? true });
    void reply.type('application/json; charset=utf-8');
    // token_strs: the vocabulary pieces (vLLM's convert_ids_to_tokens), null unless asked for
    const strs = body.return_token_strs === true ? JSON.stringify((JSON.parse(json) as number[]).map((id) => ctx.tokenizer.tokenText(id) ?? '')) : 'null';
    return `{"count":${count},"max_model_len":${ctx.options.maxModelLen},"tokens":${json},"token_strs":${strs}}`;
  });

  app.post<{ Body: { model?: string; tokens: number[] } }>('/detokenize', { schema: { body: detokenizeBody } }, async (req) => {
    checkModel(ctx, req.body.model);
    checkTokenIds(ctx, req.body.tokens, 'tokens');
    return { prompt: await ctx.text.decode(req.body.tokens, { skipSpecial: false }) };
  });

  app.get('/health', async (_req, reply) => {
    if (!ctx.engine.healthy) return reply.code(503).send({ status: 'unhealthy', reason: 'the engine is not running' });
    return { status: 'ok' };
  });

  // readiness, apart from liveness (/health): the model is loaded (the server listens only
  // after that), the engine is running, and the server is not draining for shutdown
  app.get('/ready', async (_req, reply) => {
    if (ctx.draining) return reply.code(503).send({ status: 'draining', reason: 'the server is shutting down' });
    if (!ctx.engine.healthy) return reply.code(503).send({ status: 'unready', reason: 'the engine is not running' });
    return { status: 'ready' };
  });

  // vLLM's: empties the prefix cache in memory; reset_external=true also removes this model's
  // blocks kept on disk (--kv-cache-dir), vLLM's KV connector cache. reset_running_requests is
  // accepted: loom's reset always succeeds, running requests' blocks leave the cache too.
  app.post<{ Querystring: Record<string, string | undefined> }>('/reset_prefix_cache', async (req, reply) => {
    const external = queryFlag(req.query, 'reset_external');
    queryFlag(req.query, 'reset_running_requests');
    const ok = await ctx.engine.resetPrefixCache({ external });
    if (!ok) throw new HttpError(503, 'the engine is not running');
    return reply.code(200).send();
  });

  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', ctx.metrics.contentType);
    return ctx.metrics.render();
  });
}

/** a boolean query parameter as FastAPI reads one (true/false, 1/0, yes/no, on/off); absent: false */
function queryFlag(query: Record<string, string | undefined>, name: string): boolean {
  const v = query[name];
  if (v === undefined) return false;
  if (/^(true|1|yes|on)$/i.test(v)) return true;
  if (/^(false|0|no|off)$/i.test(v)) return false;
  throw new HttpError(400, `${name}: expected a boolean, got "${v}"`, 'invalid_request_error', name);
}
