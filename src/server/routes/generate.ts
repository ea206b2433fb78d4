// LMDeploy's native surface: POST /generate (prompt or input_ids in; text, output_ids and
// meta_info out, streamed as incremental chunks or whole), POST /abort_request and
// POST /v1/encode, in LMDeploy's shapes (lmdeploy/serve/openai/endpoints/generate.py,
// management.py, auxiliary.py). Errors are LMDeploy's ErrorResponse:
// {object: "error", message, type, code, param}.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { toOpenAIError } from '../errors.js';
import type { CompletionEvent } from '../../pipeline/generate.js';
import { chatPrompt } from '../openai-request.js';
import { Slicer } from '../../pipeline/slicer.js';
import { resolveRequest } from '../../pipeline/request.js';
import { abortBody, encodeBody, generateBody } from '../schemas.js';
import { SseWriter, disconnectSignal, runStream } from '../sse.js';
import { admit } from './admission.js';
import { jsonLogprob } from './format.js';
import { generateRequest } from './generate-request.js';
import type { GenerateBody } from './generate-request.js';
import { getPplRoute } from './get-ppl.js';
import { newSummary, runPrompt } from './run.js';

/** LMDeploy's error shape (protocol.py ErrorResponse) for any error */
export function lmdeployError(err: unknown): { status: number; body: object } {
  const { status, body } = toOpenAIError(err);
  return { status, body: { object: 'error', message: body.error.message, type: body.error.type, code: status, param: body.error.param } };
}

const errorHandler = async (err: unknown, req: FastifyRequest, reply: FastifyReply): Promise<void> => {
  const invalid = validationDetail(err, req.body);
  if (invalid) return void (await reply.code(422).send(invalid));
  const { status, body } = lmdeployError(err);
  await reply.code(status).send(body);
};

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params?: { type?: string | string[]; missingProperty?: string };
}

const PYDANTIC_TYPES: Record<string, [string, string]> = {
  integer: ['int_type', 'Input should be a valid integer'],
  number: ['float_type', 'Input should be a valid number'],
  string: ['string_type', 'Input should be a valid string'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  array: ['list_type', 'Input should be a valid list'],
  object: ['dict_type', 'Input should be a valid dictionary'],
};

/** LMDeploy's (FastAPI's) 422 for a body its pydantic model refuses: {"detail": [{type, loc, msg, input}]} */
function validationDetail(err: unknown, body: unknown): object | undefined {
  const e = err as { validation?: AjvError[]; code?: string; message?: string };
  if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return { detail: [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: e.message ?? '' } }] };
  }
  if (!e.validation) return undefined;
  return {
    detail: e.validation.slice(0, 1).map((v) => {
      const path = v.instancePath.split('/').slice(1).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
      const input = path.reduce<unknown>((at, k) => (at as Record<string | number, unknown> | undefined)?.[k], body);
      if (v.keyword === 'required') return { type: 'missing', loc: ['body', ...path, v.params?.missingProperty ?? ''], msg: 'Field required', input: input ?? null };
      const named = v.keyword === 'type' ? PYDANTIC_TYPES[String([v.params?.type ?? ''].flat()[0]).split(',')[0]!] : undefined;
      return { type: named?.[0] ?? 'value_error', loc: ['body', ...path], msg: named?.[1] ?? v.message ?? 'invalid value', input: input ?? null };
    }),
  };
}

export function generateRoute(app: FastifyInstance, ctx: ServerContext): void {
  getPplRoute(app, ctx, errorHandler);
  app.post<{ Body: GenerateBody }>('/generate', { schema: { body: generateBody }, errorHandler }, async (req, reply) => {
    const body = req.body;
    const g = generateRequest(ctx, body);
    const r = await resolveRequest(ctx, g.spec);
    const prompt = r.prompts[0]!;
    const release = admit(ctx, reply, r.prompts);
    // occupied from here (no await until the engine has the request) until it ends
    if (g.sessionId !== undefined) ctx.sessions.set(g.sessionId, r.id);
    const summary = newSummary();
    const events = runPrompt(ctx, r, 0, disconnectSignal(reply), summary, { ...(g.repetitionNgram && { repetitionNgram: g.repetitionNgram }) });
    const logprobs = body.return_logprob === true;
    // LMDeploy: a stop token is neither in output_ids nor counted; completion_tokens = output_ids so far
    let generated = 0;
    const piece = (e: CompletionEvent, ids: number[], lps: [number, number][]) => ({
      text: e.text,
      output_ids: ids,
      meta_info: {
        prompt_tokens: prompt.ids.length,
        completion_tokens: generated,
        finish_reason: e.finishReason ? { type: e.finishReason } : null,
        output_token_logprobs: logprobs && lps.length > 0 ? lps : null,
        routed_experts: null,
      },
    });
    const pairs = (e: CompletionEvent): [number, number][] => (e.logprobs ?? []).map((lp) => [jsonLogprob(lp.logprob), lp.id]);
    try {
      if (body.stream) {
        const sse = new SseWriter(reply, ctx.options.slowClientTimeoutMs);
        await runStream(
          sse,
          async () => {
            for await (const e of events) {
              generated += e.tokenIds.length;
              await sse.send(piece(e, e.tokenIds, pairs(e)));
            }
          },
          (err) => {
            const { status, body: b } = lmdeployError(err);
            return { status, body: sse.started ? { error: b } : b };
          },
        );
        return reply;
      }
      let text = '';
      const ids: number[] = [];
      const lps: [number, number][] = [];
      let last: CompletionEvent = { index: 0, text: '', tokenIds: [] };
      for await (const e of events) {
        text += e.text;
        ids.push(...e.tokenIds);
        lps.push(...pairs(e));
        last = e;
      }
      generated = ids.length;
      return { ...piece(last, ids, lps), text };
    } finally {
      if (g.sessionId !== undefined && ctx.sessions.get(g.sessionId) === r.id) ctx.sessions.delete(g.sessionId);
      release();
    }
  });

  // on by default, behind the API key like every route (LMDeploy needs --enable-abort-handling)
  app.post<{ Body: { abort_all?: boolean; session_id?: number | null } }>('/abort_request', { schema: { body: abortBody }, errorHandler }, async (req, reply) => {
    const body = req.body;
    if (body.abort_all) {
      for (const active of [...ctx.requests.values()]) active.abort();
      return reply.code(200).send();
    }
    const sessionId = body.session_id ?? -1;
    const id = ctx.sessions.get(sessionId);
    if (id === undefined) return errorHandler(Object.assign(new Error(`Session ${sessionId} not found.`), { statusCode: 400 }), req, reply);
    ctx.sessions.delete(sessionId);
    ctx.engine.abort(id);
    return reply.code(200).send();
  });

  app.post<{ Body: { input: string | string[]; do_preprocess?: boolean | null; add_bos?: boolean | null } }>(
    '/v1/encode',
    { schema: { body: encodeBody }, errorHandler },
    async (req) => {
      const { input, do_preprocess: pre, add_bos: addBos } = req.body;
      const encode = async (text: string): Promise<number[]> => {
        const prompt = pre ? await chatPrompt(ctx, [{ role: 'user', content: text }], { addGenerationPrompt: true }) : text;
        return ctx.text.encode(prompt, { addSpecial: addBos ?? true, parseSpecial: true });
      };
      if (typeof input === 'string') {
        const ids = await encode(input);
        return { input_ids: ids, length: ids.length };
      }
      // a long list in slices, so other requests are served in between
      const slicer = new Slicer();
      const all: number[][] = [];
      for (const text of input) {
        await slicer.tick();
        all.push(await encode(text));
      }
      return { input_ids: all, length: all.map((ids) => ids.length) };
    },
  );
}
