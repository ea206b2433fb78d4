// The small endpoints: /v1/models, /tokenize, /detokenize, /health, /ready, /metrics.
import type { FastifyInstance } from 'fastify';
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
}

export function miscRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const started = Math.floor(Date.now() / 1000);
  app.get('/v1/models', async () => ({
    object: 'list',
    data: [{ id: ctx.options.servedModelName, object: 'model', created: started, owned_by: 'loom', max_model_len: ctx.options.maxModelLen }],
  }));

  app.post<{ Body: TokenizeBody }>('/tokenize', { schema: { body: tokenizeBody } }, async (req, reply) => {
    const body = req.body;
    checkModel(ctx, body.model);
    // the ids arrive as JSON text: a million of them are never a JS array on this thread
    const { json, count } = body.messages
      ? await ctx.text.encodeJson(await chatPrompt(ctx, body.messages, { addGenerationPrompt: body.add_generation_prompt ?? true }), { addSpecial: false, parseSpecial: true })
      : await ctx.text.encodeJson(body.prompt ?? '', { addSpecial: body.add_special_tokens ?? true });
    void reply.type('application/json; charset=utf-8');
    return `{"tokens":${json},"count":${count},"max_model_len":${ctx.options.maxModelLen}}`;
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

  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', ctx.metrics.contentType);
    return ctx.metrics.render();
  });
}
