// LMDeploy's /generate body (lmdeploy/serve/openai/protocol.py GenerateReqInput) as a
// RequestSpec, checked as lmdeploy/serve/openai/endpoints/generate.py check_request does,
// with its messages and its defaults (GenerationConfig in lmdeploy/messages.py: max_tokens
// 128, temperature 0.8, top_k 50, top_p 1). Unknown fields are ignored, as pydantic does.
import type { ServerContext } from '../context.js';
import { noteIgnoredFields } from '../context.js';
import { HttpError } from '../errors.js';
import type { RequestSpec } from '../../pipeline/request.js';
import { generateBody } from '../schemas.js';
import { grammarOfBody } from '../structured-output.js';
import type { ResponseFormat } from '../structured-output.js';

export interface GenerateBody {
  /** OpenAI's json_object / json_schema, or LMDeploy's regex_schema */
  response_format?: ResponseFormat | null;
  session_id?: number | null;
  prompt?: string | null;
  input_ids?: number[] | null;
  image_data?: unknown;
  return_logprob?: boolean | null;
  max_tokens?: number;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  stream?: boolean | null;
  temperature?: number | null;
  repetition_penalty?: number | null;
  ignore_eos?: boolean | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  skip_special_tokens?: boolean | null;
  spaces_between_special_tokens?: boolean | null;
  include_stop_str_in_output?: boolean | null;
  return_routed_experts?: boolean | null;
  repetition_ngram_size?: number;
  repetition_ngram_threshold?: number;
  media_io_kwargs?: Record<string, unknown> | null;
  mm_processor_kwargs?: Record<string, unknown> | null;
  seed?: number | null;
}

const FIELDS = new Set(Object.keys(generateBody.properties));

export interface GenerateRequest {
  readonly spec: RequestSpec;
  /** the LMDeploy session the request occupies while it runs; undefined = none (-1) */
  readonly sessionId: number | undefined;
  readonly repetitionNgram?: { size: number; threshold: number };
}

const bad = (message: string, param: string): never => {
  throw new HttpError(400, message, 'invalid_request_error', param);
};

export function generateRequest(ctx: ServerContext, body: GenerateBody): GenerateRequest {
  noteIgnoredFields(ctx, body, FIELDS, '/generate');
  if (body.return_routed_experts) bad('return_routed_experts is not supported: loom does not record routed experts.', 'return_routed_experts');
  if (body.image_data != null) bad('image_data is not supported on /generate: send images in a chat request (/v1/chat/completions, /v1/messages, /v1/responses or /api/chat).', 'image_data');
  const hasPrompt = body.prompt != null;
  if (hasPrompt === (body.input_ids != null)) bad('You must specify exactly one of prompt or input_ids', hasPrompt ? 'input_ids' : 'prompt');
  if (body.prompt === '') bad('The prompt must not be an empty string', 'prompt');
  if (body.input_ids != null && body.input_ids.length === 0) bad('The input_ids must not be an empty list', 'input_ids');
  const maxTokens = body.max_tokens ?? 128;
  if (maxTokens <= 0) bad(`The max_tokens ${maxTokens} must be a positive integer.`, 'max_tokens');
  const sessionId = body.session_id != null && body.session_id !== -1 ? body.session_id : undefined;
  if (sessionId !== undefined && ctx.sessions.has(sessionId)) bad(`The session_id ${sessionId} is occupied.`, 'session_id');
  if (body.top_p != null && !(body.top_p > 0 && body.top_p <= 1)) bad(`The top_p ${body.top_p} must be in (0, 1].`, 'top_p');
  if (body.top_k != null && body.top_k < 0) bad(`The top_k ${body.top_k} cannot be a negative integer.`, 'top_k');
  if (body.temperature != null && !(body.temperature >= 0 && body.temperature <= 2)) bad(`The temperature ${body.temperature} must be in [0, 2]`, 'temperature');
  if (body.min_p != null && !(body.min_p >= 0 && body.min_p <= 1)) bad(`min_p should be in range [0, 1], but found ${body.min_p}`, 'min_p');
  const size = body.repetition_ngram_size ?? 0;
  const threshold = body.repetition_ngram_threshold ?? 0;
  return {
    sessionId,
    ...(size > 0 && threshold > 0 && { repetitionNgram: { size, threshold } }),
    spec: {
      prompts: [body.input_ids ?? body.prompt!],
      promptParam: body.input_ids != null ? 'input_ids' : 'prompt',
      addSpecialTokens: true,
      parseSpecial: true,
      maxTokens,
      maxTokensParam: 'max_tokens',
      defaultMaxTokens: 128,
      sampling: {
        temperature: body.temperature ?? 0.8,
        topK: body.top_k ?? 50,
        topP: body.top_p ?? 1,
        minP: body.min_p ?? 0,
        repetitionPenalty: body.repetition_penalty ?? 1,
        ignoreEos: body.ignore_eos ?? false,
        stopTokenIds: body.stop_token_ids ?? [],
        seed: body.seed ?? null,
        n: 1,
        logprobs: body.return_logprob ? 0 : null,
        grammar: grammarOfBody({ response_format: body.response_format ?? null })?.grammar ?? null,
      },
      stop: body.stop ?? null,
      includeStopStrInOutput: body.include_stop_str_in_output ?? false,
      skipSpecialTokens: body.skip_special_tokens ?? true,
      idPrefix: 'gen',
      paramNames: { logprobs: 'return_logprob', grammar: 'response_format' },
    },
  };
}
