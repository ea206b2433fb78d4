// What a server on a network needs around its routes: the API key (constant-time, as
// `Authorization: Bearer`; on Anthropic's /v1/messages also as its `x-api-key` header), CORS for the origins the operator allows (none by default), and
// one log line per request that never carries prompt text.
import { createHash, timingSafeEqual } from 'node:crypto';
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { toAnthropicError, toOpenAIError } from './errors.js';
import { WEBUI_PATHS } from './routes/webui.js';

export interface SecurityOptions {
  readonly apiKey?: string | undefined;
  /** origins browsers may call from ("*" for any); empty: no CORS headers at all */
  readonly allowedOrigins?: readonly string[] | undefined;
  /** one line per request on stderr: method, path, status, ms (never the body) */
  readonly logRequests?: boolean | undefined;
}

/** paths anyone may read without the API key: probes, metrics, and the chat page (it asks for the key itself) */
const OPEN_PATHS = new Set(['/health', '/ready', '/metrics', ...WEBUI_PATHS]);

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** Compares in time independent of where the strings differ, and of their lengths. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

export function secureApp(app: FastifyInstance, opts: SecurityOptions): void {
  const origins = opts.allowedOrigins ?? [];
  if (origins.length > 0) {
    void app.register(cors, {
      origin: origins.includes('*') ? '*' : [...origins],
      methods: ['GET', 'POST', 'OPTIONS'],
      allowedHeaders: ['authorization', 'content-type', 'x-api-key', 'anthropic-version', 'anthropic-beta'],
      maxAge: 600,
    });
  }
  const apiKey = opts.apiKey;
  if (apiKey) {
    app.addHook('onRequest', async (req, reply) => {
      // browsers send CORS preflights without credentials
      if (req.method === 'OPTIONS' || OPEN_PATHS.has(req.url.split('?')[0]!)) return;
      const m = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
      // Anthropic's routes also take its x-api-key header (older SDKs, most tools), and answer in its shape
      const anthropic = req.url.startsWith('/v1/messages');
      const xApiKey = anthropic ? req.headers['x-api-key'] : undefined;
      const given = m?.[1] ?? (typeof xApiKey === 'string' ? xApiKey : undefined);
      if (given === undefined || !sameSecret(given, apiKey)) {
        const err = Object.assign(new Error('invalid or missing API key'), { statusCode: 401, code: 'invalid_api_key' });
        if (anthropic) return reply.code(401).send(toAnthropicError(err).body);
        const { body } = toOpenAIError(err);
        body.error.type = 'authentication_error';
        await reply.code(401).header('www-authenticate', 'Bearer').send(body);
      }
    });
  }
  if (opts.logRequests) {
    app.addHook('onResponse', async (req, reply) => {
      const path = req.url.split('?')[0];
      console.error(`loom: ${req.method} ${path} ${reply.statusCode} ${reply.elapsedTime.toFixed(0)}ms`);
    });
  }
}
