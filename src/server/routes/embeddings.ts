// OpenAI's POST /v1/embeddings, and rerank in the Jina/Cohere shape llama-server and vLLM
// serve (POST /v1/rerank, /rerank): only translation here; pipeline/embed.ts does the work.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { checkModel } from '../context.js';
import { HttpError } from '../errors.js';
import { disconnectSignal } from '../sse.js';
import { embed, rerank } from '../../pipeline/embed.js';
import type { EmbedInput } from '../../pipeline/embed.js';
import { admit } from './admission.js';

interface EmbeddingsBody {
  model?: string;
  input: unknown;
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  /** vLLM's */
  truncate_prompt_tokens?: number;
  normalize?: boolean;
}

const embeddingsBody = {
  type: 'object',
  required: ['input'],
  properties: {
    model: { type: 'string' },
    input: {},
    encoding_format: { enum: ['float', 'base64'] },
    dimensions: { type: 'integer' },
    user: { type: 'string' },
    truncate_prompt_tokens: { type: 'integer' },
    normalize: { type: 'boolean' },
  },
  additionalProperties: false,
} as const;

interface RerankBody {
  model?: string;
  query: string;
  documents: (string | { text: string })[];
  top_n?: number;
  return_documents?: boolean;
  truncate_prompt_tokens?: number;
}

const rerankBody = {
  type: 'object',
  required: ['query', 'documents'],
  properties: {
    model: { type: 'string' },
    query: { type: 'string' },
    documents: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'object', required: ['text'], properties: { text: { type: 'string' } } }] } },
    top_n: { type: 'integer', minimum: 0 },
    return_documents: { type: 'boolean' },
    truncate_prompt_tokens: { type: 'integer' },
  },
  additionalProperties: false,
} as const;

/** OpenAI's input: a string, a list of strings, token ids, or a list of token-id lists */
export function embeddingInputs(input: unknown, param = 'input'): EmbedInput[] {
  const bad = (): HttpError => new HttpError(400, `${param} must be a string, a list of strings, a list of token ids or a list of token-id lists`, 'invalid_request_error', param);
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input)) throw bad();
  if (input.length === 0) throw new HttpError(400, `${param} must not be an empty list`, 'invalid_request_error', param);
  if (input.every((x) => typeof x === 'string')) return input as string[];
  if (input.every((x) => typeof x === 'number')) return [input as number[]];
  if (input.every((x) => Array.isArray(x) && x.every((y) => typeof y === 'number'))) return input as number[][];
  throw bad();
}

/** float32 little-endian bytes in base64, as OpenAI's encoding_format base64 */
export function base64Floats(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

export function embeddingsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Body: EmbeddingsBody }>('/v1/embeddings', { schema: { body: embeddingsBody } }, async (req, reply) => {
    const body = req.body;
    checkModel(ctx, body.model);
    const inputs = embeddingInputs(body.input);
    const release = admit(ctx, reply, inputs.map(() => ({ params: { n: 1 } })));
    try {
      const { vectors, promptTokens } = await embed(ctx, inputs, {
        signal: disconnectSignal(reply),
        ...(body.dimensions !== undefined && { dimensions: body.dimensions }),
        ...(body.truncate_prompt_tokens !== undefined && { truncatePromptTokens: body.truncate_prompt_tokens }),
        ...(body.normalize !== undefined && { normalize: body.normalize }),
      });
      const base64 = body.encoding_format === 'base64';
      return {
        object: 'list',
        data: vectors.map((v, index) => ({ object: 'embedding', index, embedding: base64 ? base64Floats(v) : Array.from(v) })),
        model: body.model ?? ctx.options.servedModelName,
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      };
    } finally {
      release();
    }
  });

  for (const path of ['/v1/rerank', '/rerank', '/v2/rerank']) {
    app.post<{ Body: RerankBody }>(path, { schema: { body: rerankBody } }, async (req, reply) => {
      const body = req.body;
      checkModel(ctx, body.model);
      const texts = body.documents.map((d) => (typeof d === 'string' ? d : d.text));
      if (texts.length === 0) throw new HttpError(400, 'documents must not be an empty list', 'invalid_request_error', 'documents');
      const release = admit(ctx, reply, texts.map(() => ({ params: { n: 1 } })));
      try {
        const { results, promptTokens } = await rerank(ctx, body.query, texts, {
          signal: disconnectSignal(reply),
          ...(body.top_n !== undefined && { topN: body.top_n }),
          ...(body.truncate_prompt_tokens !== undefined && { truncatePromptTokens: body.truncate_prompt_tokens }),
        });
        return {
          id: `rerank-${req.id}`,
          model: body.model ?? ctx.options.servedModelName,
          object: 'list',
          usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
          results: results.map(({ index, score }) => ({
            index,
            relevance_score: score,
            ...(body.return_documents && { document: { text: texts[index]! } }),
          })),
        };
      } finally {
        release();
      }
    });
  }
}
