// The HTTP server: fastify with strict body validation, an optional API key, the routes,
// and one error handler that turns every failure into OpenAI's error shape.
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { EngineClient } from '../engine/client.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { ServerContext, ServerOptions } from './context.js';
import { toVllmError } from './errors.js';
import { ServerMetrics } from './metrics.js';
import { fastifyNetworkOptions } from './network.js';
import { maxTokenBytes } from '../pipeline/prompt-bytes.js';
import { secureApp } from './security.js';
import { TextWork } from './text-work.js';
import type { TokenizerPool } from './tokenizer-pool.js';
import { chatRoute } from './routes/chat.js';
import { completionsRoute } from './routes/completions.js';
import { generateRoute } from './routes/generate.js';
import { messagesRoutes } from './routes/messages.js';
import { miscRoutes } from './routes/misc.js';
import { ollamaRoutes } from './routes/ollama.js';
import { responsesRoute } from './routes/responses.js';
import { webuiRoute } from './routes/webui.js';
import { embeddingsRoutes } from './routes/embeddings.js';
import type { VisionContext } from '../pipeline/images.js';

export interface AppParts {
  readonly engine: EngineClient;
  readonly tokenizer: Tokenizer;
  readonly options: ServerOptions;
  readonly logger?: boolean;
  /** workers for long texts; the app owns it from here (closed with the app) */
  readonly tokenizerPool?: TokenizerPool | undefined;
  /** the vision projector's image preparation (--mmproj); the app closes it when it is a pool */
  readonly vision?: VisionContext | undefined;
}

export function buildApp(parts: AppParts): { app: FastifyInstance; ctx: ServerContext } {
  const { options } = parts;
  const app = Fastify({
    logger: parts.logger ?? false,
    bodyLimit: options.bodyLimitBytes,
    // read timeouts, header size, TLS
    ...fastifyNetworkOptions(options.network ?? {}),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
  });
  const ctx: ServerContext = {
    engine: parts.engine,
    tokenizer: parts.tokenizer,
    text: new TextWork(parts.tokenizer, parts.tokenizerPool, options.chatTemplate),
    options,
    metrics: new ServerMetrics(options.servedModelName, parts.engine),
    inFlight: 0,
    draining: false,
    requests: new Map(),
    sessions: new Map(),
    ignoredFields: new Set(),
    ...(parts.vision && { vision: parts.vision }),
  };
  const vision = parts.vision;
  if (vision?.close) app.addHook('onClose', async () => vision.close?.());
  const pool = parts.tokenizerPool;
  if (pool) app.addHook('onClose', async () => pool.close());
  maxTokenBytes(parts.tokenizer); // a pass over the vocabulary, done now rather than in the first request
  secureApp(app, options);
  app.setErrorHandler(async (err, _req, reply) => {
    const { status, body } = toVllmError(err);
    if (status >= 500) app.log.error(err);
    await reply.code(status).send(body);
  });
  app.setNotFoundHandler(async (req, reply) => {
    await reply.code(404).send({ error: { message: `no route for ${req.method} ${req.url}`, type: 'NotFoundError', param: null, code: 404 } });
  });
  completionsRoute(app, ctx);
  chatRoute(app, ctx);
  responsesRoute(app, ctx);
  generateRoute(app, ctx);
  miscRoutes(app, ctx);
  embeddingsRoutes(app, ctx);
  ollamaRoutes(app, ctx);
  messagesRoutes(app, ctx);
  if (options.webui) webuiRoute(app);
  return { app, ctx };
}
