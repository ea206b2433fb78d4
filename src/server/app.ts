// The HTTP server: fastify with strict body validation, an optional API key, the routes,
// and one error handler that turns every failure into OpenAI's error shape.
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { EngineClient } from '../engine/client.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { ServerContext, ServerOptions } from './context.js';
import { toOpenAIError } from './errors.js';
import { ServerMetrics } from './metrics.js';
import { chatRoute } from './routes/chat.js';
import { completionsRoute } from './routes/completions.js';
import { generateRoute } from './routes/generate.js';
import { miscRoutes } from './routes/misc.js';
import { ollamaRoutes } from './routes/ollama.js';
import { WEBUI_PATHS, webuiRoute } from './routes/webui.js';

export interface AppParts {
  readonly engine: EngineClient;
  readonly tokenizer: Tokenizer;
  readonly options: ServerOptions;
  readonly logger?: boolean;
}

/** paths anyone may read without the API key (the chat page asks for the key itself) */
const OPEN_PATHS = new Set(['/health', '/metrics', ...WEBUI_PATHS]);

export function buildApp(parts: AppParts): { app: FastifyInstance; ctx: ServerContext } {
  const { options } = parts;
  const app = Fastify({
    logger: parts.logger ?? false,
    bodyLimit: options.bodyLimitBytes,
    // a client that sends its request too slowly is cut off
    requestTimeout: 30_000,
    connectionTimeout: 0,
    keepAliveTimeout: 5_000,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false } },
  });
  const ctx: ServerContext = {
    engine: parts.engine,
    tokenizer: parts.tokenizer,
    options,
    metrics: new ServerMetrics(options.servedModelName, parts.engine),
    inFlight: 0,
    draining: false,
    requests: new Map(),
    sessions: new Map(),
    ignoredFields: new Set(),
  };
  if (options.apiKey) {
    const expected = `Bearer ${options.apiKey}`;
    app.addHook('onRequest', async (req, reply) => {
      if (OPEN_PATHS.has(req.url.split('?')[0]!)) return;
      if (req.headers.authorization !== expected) {
        const { body } = toOpenAIError(Object.assign(new Error('invalid or missing API key'), { statusCode: 401, code: 'invalid_api_key' }));
        body.error.type = 'authentication_error';
        await reply.code(401).send(body);
      }
    });
  }
  app.setErrorHandler(async (err, _req, reply) => {
    const { status, body } = toOpenAIError(err);
    if (status >= 500) app.log.error(err);
    await reply.code(status).send(body);
  });
  app.setNotFoundHandler(async (req, reply) => {
    await reply.code(404).send({ error: { message: `no route for ${req.method} ${req.url}`, type: 'invalid_request_error', param: null, code: 'not_found' } });
  });
  completionsRoute(app, ctx);
  chatRoute(app, ctx);
  generateRoute(app, ctx);
  miscRoutes(app, ctx);
  ollamaRoutes(app, ctx);
  if (options.webui) webuiRoute(app);
  return { app, ctx };
}
