// Ollama's API beside OpenAI's (ollama/ollama docs/api.md): /api/generate and /api/chat,
// streamed as newline-delimited JSON (or whole with "stream": false) with Ollama's final
// statistics in nanoseconds; /api/tags, /api/show, /api/ps, /api/version. Errors are
// Ollama's `{"error": "…"}`. Requests go through the same pipeline as the OpenAI routes.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { humanCount } from '../../model/describe.js';
import { PACKAGE_VERSION } from '../../package-info.js';
import type { ServerContext } from '../context.js';
import { HttpError, toOpenAIError } from '../errors.js';
import { checkCommon, ollamaChatSpec, ollamaGenerateSpec } from '../ollama-request.js';
import type { OllamaChatBody, OllamaGenerateBody } from '../ollama-request.js';
import { resolveRequest } from '../../pipeline/request.js';
import type { RequestSpec, ResolvedRequest } from '../../pipeline/request.js';
import { ClientGoneError, SseWriter, disconnectSignal } from '../sse.js';
import { admit } from './admission.js';
import { newSummary, runPrompt } from './run.js';
import { ollamaEmbedRoutes } from './ollama-embed.js';

const DONE_REASON: Record<string, string> = { stop: 'stop', length: 'length', abort: 'stop' };

function ollamaError(err: unknown): { status: number; body: { error: string } } {
  const { status, body } = toOpenAIError(err);
  return { status, body: { error: body.error.message } };
}

/** Ollama names carry a tag; `model` and `model:latest` are the same model. */
function ollamaName(ctx: ServerContext): string {
  const name = ctx.options.servedModelName;
  return name.includes(':') ? name : `${name}:latest`;
}

function checkModelName(ctx: ServerContext, model: string | undefined): string {
  if (!model) throw new HttpError(400, 'model is required', 'invalid_request_error', 'model');
  if (model !== ctx.options.servedModelName && model !== ollamaName(ctx)) throw new HttpError(404, `model "${model}" not found, try pulling it first`, 'invalid_request_error', 'model');
  return model;
}

function details(ctx: ServerContext) {
  const d = ctx.options.description;
  return {
    parent_model: '',
    format: d?.format ?? 'gguf',
    family: d?.family ?? '',
    families: d ? [d.family] : null,
    parameter_size: humanCount(d?.parameterCount ?? 0),
    quantization_level: d?.quantization ?? '',
  };
}

function listed(ctx: ServerContext) {
  const d = ctx.options.description;
  return { name: ollamaName(ctx), model: ollamaName(ctx), modified_at: (d?.modifiedAt ?? new Date()).toISOString(), size: d?.sizeBytes ?? 0, digest: d?.digest ?? '', details: details(ctx) };
}

const ns = (fromMs: number, toMs: number): number => Math.max(0, Math.round((toMs - fromMs) * 1e6));

type Shape = (text: string) => Record<string, unknown>;

/** Runs one resolved request and answers it as Ollama does, streamed or whole. */
async function answer(ctx: ServerContext, reply: FastifyReply, r: ResolvedRequest, stream: boolean, model: string, shape: Shape, context?: readonly number[]): Promise<unknown> {
  const started = performance.now();
  const release = admit(ctx, reply, r.prompts);
  const summary = newSummary();
  const events = runPrompt(ctx, r, 0, disconnectSignal(reply), summary);
  const prompt = r.prompts[0]!;
  let first: number | undefined;
  let reason = 'stop';
  const output: number[] = [];
  const final = (): Record<string, unknown> => {
    const end = performance.now();
    return {
      done: true,
      done_reason: reason,
      ...(context && { context: [...context, ...output] }),
      total_duration: ns(started, end),
      load_duration: 0,
      prompt_eval_count: summary.promptTokens || prompt.ids.length,
      prompt_eval_duration: ns(started, first ?? end),
      eval_count: output.length,
      eval_duration: ns(first ?? end, end),
    };
  };
  const head = (): Record<string, unknown> => ({ model, created_at: new Date().toISOString() });
  try {
    if (!stream) {
      let text = '';
      for await (const e of events) {
        first ??= performance.now();
        text += e.text;
        output.push(...e.tokenIds);
        if (e.finishReason) reason = DONE_REASON[e.finishReason] ?? e.finishReason;
      }
      return { ...head(), ...shape(text), ...final() };
    }
    const out = new SseWriter(reply, ctx.options.slowClientTimeoutMs, 'ndjson');
    try {
      for await (const e of events) {
        first ??= performance.now();
        output.push(...e.tokenIds);
        if (e.finishReason) reason = DONE_REASON[e.finishReason] ?? e.finishReason;
        if (e.text) await out.send({ ...head(), ...shape(e.text), done: false });
      }
      await out.send({ ...head(), ...shape(''), ...final() });
    } catch (err) {
      if (err instanceof ClientGoneError || out.closed) return reply;
      const { status, body } = ollamaError(err);
      if (!out.started) out.fail(status, body);
      else await out.send(body).catch(() => undefined);
    } finally {
      out.end();
    }
    return reply;
  } finally {
    release();
  }
}

/** Nothing to generate: Ollama answers that the model is loaded. */
function loaded(model: string, shape: Shape) {
  return { model, created_at: new Date().toISOString(), ...shape(''), done: true, done_reason: 'load' };
}

export function ollamaRoutes(app: FastifyInstance, ctx: ServerContext): void {
  void app.register(async (api) => {
    // Ollama reads any body as JSON (its docs' `curl -d` sends form encoding, fetch text/plain)
    api.removeContentTypeParser('text/plain');
    api.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
      try {
        done(null, body === '' ? {} : JSON.parse(body as string));
      } catch (err) {
        done(new HttpError(400, `invalid JSON body: ${(err as Error).message}`), undefined);
      }
    });
    api.setErrorHandler(async (err, _req, reply) => {
      const { status, body } = ollamaError(err);
      await reply.code(status).send(body);
    });

    api.get('/api/version', async () => ({ version: PACKAGE_VERSION }));
    api.get('/api/tags', async () => ({ models: [listed(ctx)] }));
    api.get('/api/ps', async () => ({
      models: [{ ...listed(ctx), expires_at: new Date(Date.now() + 365 * 86400_000).toISOString(), size_vram: 0, context_length: ctx.options.maxModelLen }],
    }));
    api.post<{ Body: { model?: string; name?: string } }>('/api/show', async (req) => {
      checkCommon(req.body, '/api/show');
      checkModelName(ctx, req.body.model ?? req.body.name);
      const d = ctx.options.description;
      const arch = d?.family ?? '';
      const c = d?.config;
      return {
        modelfile: `# loom serves ${d?.path ?? ctx.options.servedModelName}\nFROM ${d?.path ?? ctx.options.servedModelName}\n`,
        parameters: '',
        template: d?.chatTemplate ?? '',
        details: details(ctx),
        model_info: {
          'general.architecture': arch,
          'general.parameter_count': d?.parameterCount ?? 0,
          ...(c && {
            [`${arch}.context_length`]: ctx.options.maxModelLen,
            [`${arch}.embedding_length`]: c.hiddenSize,
            [`${arch}.block_count`]: c.numLayers,
            [`${arch}.attention.head_count`]: c.numHeads,
            [`${arch}.attention.head_count_kv`]: c.numKvHeads,
            [`${arch}.feed_forward_length`]: c.ffnSize,
            [`${arch}.vocab_size`]: c.vocabSize,
          }),
        },
        capabilities: ctx.engine.info.pooling ? ['embedding'] : ['completion'],
        modified_at: (d?.modifiedAt ?? new Date()).toISOString(),
      };
    });

    api.post<{ Body: OllamaGenerateBody }>('/api/generate', async (req, reply) => {
      checkCommon(req.body, '/api/generate');
      const model = checkModelName(ctx, req.body.model);
      const shape: Shape = (text) => ({ response: text });
      const made = await ollamaGenerateSpec(ctx, req.body);
      if (!made) return loaded(model, shape);
      const r = await resolveRequest(ctx, made.spec);
      // a prompt with images has no context to hand back: its image tokens cannot be sent again as ids
      return answer(ctx, reply, r, req.body.stream ?? true, model, shape, req.body.raw || made.images ? undefined : r.prompts[0]!.ids);
    });

    api.post<{ Body: OllamaChatBody }>('/api/chat', async (req, reply) => {
      checkCommon(req.body, '/api/chat');
      const model = checkModelName(ctx, req.body.model);
      const shape: Shape = (text) => ({ message: { role: 'assistant', content: text } });
      const spec: RequestSpec | undefined = await ollamaChatSpec(ctx, req.body);
      if (!spec) return loaded(model, shape);
      const r = await resolveRequest(ctx, spec);
      return answer(ctx, reply, r, req.body.stream ?? true, model, shape);
    });

    ollamaEmbedRoutes(api, ctx, (model) => checkModelName(ctx, model));
  });
}
