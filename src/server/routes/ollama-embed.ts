// Ollama's embedding endpoints: POST /api/embed (a string or a list; L2-normalized vectors;
// over-long inputs truncated unless "truncate": false) and the older /api/embeddings (one
// "prompt", its vector as the model pools it). Registered inside ollama.ts's scope, so
// Ollama's body parsing and {"error": "…"} shape apply.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { HttpError } from '../errors.js';
import { disconnectSignal } from '../sse.js';
import { embed } from '../../pipeline/embed.js';
import { admit } from './admission.js';

interface EmbedBody {
  model?: string;
  input?: unknown;
  truncate?: boolean;
  dimensions?: number;
  options?: unknown;
  keep_alive?: unknown;
}

interface LegacyBody {
  model?: string;
  prompt?: unknown;
  options?: unknown;
  keep_alive?: unknown;
}

const ns = (ms: number): number => Math.round(ms * 1e6);

export function ollamaEmbedRoutes(api: FastifyInstance, ctx: ServerContext, checkModelName: (model: string | undefined) => string): void {
  api.post<{ Body: EmbedBody }>('/api/embed', async (req, reply) => {
    const started = performance.now();
    const body = req.body ?? {};
    const model = checkModelName(body.model);
    const input = body.input;
    const inputs = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((x) => typeof x === 'string') ? (input as string[]) : undefined;
    if (!inputs) throw new HttpError(400, 'input must be a string or a list of strings', 'invalid_request_error', 'input');
    if (inputs.length === 0) throw new HttpError(400, 'input must not be an empty list', 'invalid_request_error', 'input');
    if (body.dimensions !== undefined && (typeof body.dimensions !== 'number' || !Number.isInteger(body.dimensions))) throw new HttpError(400, 'dimensions must be an integer', 'invalid_request_error', 'dimensions');
    const release = admit(ctx, reply, inputs.map(() => ({ params: { n: 1 } })));
    try {
      const { vectors, promptTokens } = await embed(ctx, inputs, {
        normalize: true,
        signal: disconnectSignal(reply),
        // Ollama truncates to the context unless told not to
        ...(body.truncate !== false && { truncatePromptTokens: -1 }),
        ...(body.dimensions !== undefined && { dimensions: body.dimensions }),
      });
      return { model, embeddings: vectors.map((v) => Array.from(v)), total_duration: ns(performance.now() - started), load_duration: 0, prompt_eval_count: promptTokens };
    } finally {
      release();
    }
  });

  api.post<{ Body: LegacyBody }>('/api/embeddings', async (req, reply) => {
    const body = req.body ?? {};
    checkModelName(body.model);
    if (typeof body.prompt !== 'string') throw new HttpError(400, 'prompt must be a string', 'invalid_request_error', 'prompt');
    // Ollama's older endpoint: an empty prompt answers an empty vector (it loads the model)
    if (body.prompt === '') return { embedding: [] };
    const release = admit(ctx, reply, [{ params: { n: 1 } }]);
    try {
      const { vectors } = await embed(ctx, [body.prompt], { normalize: false, signal: disconnectSignal(reply), truncatePromptTokens: -1 });
      return { embedding: Array.from(vectors[0]!) };
    } finally {
      release();
    }
  });
}
