// The one HTTP error type, and the one place loom's errors (src/errors.ts: the pipeline's,
// the engine's, the chat template's) become OpenAI-shaped replies:
// {"error": {"message", "type", "param", "code"}} with a fitting status. The other API
// families (LMDeploy's, Ollama's) reshape this one classification.
import { STATUS_CODES } from 'node:http';
import { ContextLengthExceededError, InvalidArgumentError, LoomError } from '../errors.js';
import { EngineDeadError } from '../engine/request-stream.js';
import { ChatTemplateError } from '../tokenizer/chat-template.js';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = status === 401 ? 'authentication_error' : status >= 500 ? 'server_error' : 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The status and body for any error thrown while handling a request. */
export function toOpenAIError(err: unknown): { status: number; body: OpenAIErrorBody } {
  const e = classify(err);
  return { status: e.status, body: { error: { message: e.message, type: e.type, param: e.param, code: e.code } } };
}

/** vLLM's ErrorResponse (its /v1 routes): the type names the status, the code is the status itself */
export interface VllmErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

const VLLM_TYPES: Record<number, string> = { 400: 'BadRequestError', 404: 'NotFoundError', 500: 'InternalServerError', 501: 'NotImplementedError' };

/** The status and vLLM's body for an error on the OpenAI routes (other statuses: the status's phrase, as vLLM's HTTPException handler) */
export function toVllmError(err: unknown): { status: number; body: VllmErrorBody } {
  const e = classify(err);
  const type = VLLM_TYPES[e.status] ?? STATUS_CODES[e.status] ?? 'Error';
  return { status: e.status, body: { error: { message: e.message, type, param: e.param, code: e.status } } };
}

function classify(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof ContextLengthExceededError) return new HttpError(400, err.message, 'invalid_request_error', err.param ?? 'messages', 'context_length_exceeded');
  if (err instanceof InvalidArgumentError) return new HttpError(400, err.message, 'invalid_request_error', err.param);
  if (err instanceof ChatTemplateError) return new HttpError(400, err.message, 'invalid_request_error', 'messages');
  if (err instanceof EngineDeadError) return new HttpError(503, err.message, 'server_error', null, 'engine_unavailable');
  // the rest (EngineRefusedError: the engine refused a resolved request; model errors) are the request's fault
  if (err instanceof LoomError) return new HttpError(400, err.message);
  const fastify = err as { statusCode?: number; code?: string; message?: string; validation?: { instancePath: string; params?: { missingProperty?: string; additionalProperty?: string } }[] };
  if (fastify.validation) return validationError(fastify.message ?? 'invalid request', fastify.validation);
  if (typeof fastify.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    const message = fastify.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || fastify.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? `invalid JSON body: ${fastify.message}` : (fastify.message ?? 'bad request');
    return new HttpError(fastify.statusCode, message, 'invalid_request_error', null, fastify.code ?? null);
  }
  return new HttpError(500, 'internal server error', 'server_error');
}

/** ajv's first complaint, with the offending field as `param`. */
function validationError(message: string, errors: { instancePath: string; params?: { missingProperty?: string; additionalProperty?: string } }[]): HttpError {
  const first = errors[0];
  const path = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') ?? '';
  const extra = first?.params?.additionalProperty;
  if (extra !== undefined) {
    const where = path ? ` in ${path}` : '';
    return new HttpError(400, `Unrecognized request argument supplied${where}: ${extra}`, 'invalid_request_error', extra);
  }
  const param = first?.params?.missingProperty ?? (path || null);
  const text = message.replace(/^body\/?/, '').replace(/^body /, '').trim();
  return new HttpError(400, text.startsWith('must') && param ? `${param} ${text}` : text || message, 'invalid_request_error', param);
}

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/** Anthropic's error types by status (docs: API errors) */
function anthropicType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  return status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** The same classification in Anthropic's shape: {"type": "error", "error": {"type", "message"}}. */
export function toAnthropicError(err: unknown): { status: number; body: AnthropicErrorBody } {
  const e = classify(err);
  return { status: e.status, body: { type: 'error', error: { type: anthropicType(e.status), message: e.message } } };
}
