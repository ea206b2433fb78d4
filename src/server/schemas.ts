// JSON schemas of the request bodies (validated by fastify's ajv with no coercion and no
// silent removal): a wrong type is a 400 naming the field. Unknown top-level fields are
// accepted, as vLLM and LMDeploy accept them, and reported once per name
// (context.ts noteIgnoredFields); nested objects stay strict.
import { REASONING_EFFORTS } from './reasoning-effort.js';
import { structuredOutputSchemas } from './structured-output.js';

const stop = {
  anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }],
} as const;
const tokenIds = { type: 'array', items: { type: 'integer', minimum: 0 } } as const;

/** sampling fields shared by /v1/completions and /v1/chat/completions (OpenAI + vLLM extras) */
const sampling = {
  max_tokens: { type: ['integer', 'null'], minimum: 1 },
  temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
  top_p: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: 1 },
  top_k: { type: ['integer', 'null'], minimum: -1 },
  min_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
  n: { type: ['integer', 'null'], minimum: 1 }, // the cap is --max-n (limits.ts)
  stop,
  stop_token_ids: { anyOf: [tokenIds, { type: 'null' }] },
  seed: { type: ['integer', 'null'] },
  presence_penalty: { type: ['number', 'null'], minimum: -2, maximum: 2 },
  frequency_penalty: { type: ['number', 'null'], minimum: -2, maximum: 2 },
  repetition_penalty: { type: ['number', 'null'], exclusiveMinimum: 0 },
  logit_bias: { type: ['object', 'null'], patternProperties: { '^[0-9]+$': { type: 'number', minimum: -100, maximum: 100 } }, additionalProperties: false },
  ignore_eos: { type: ['boolean', 'null'] },
  min_tokens: { type: ['integer', 'null'], minimum: 0 },
  skip_special_tokens: { type: ['boolean', 'null'] },
  stream: { type: ['boolean', 'null'] },
  stream_options: {
    type: ['object', 'null'],
    properties: { include_usage: { type: ['boolean', 'null'] }, continuous_usage_stats: { type: ['boolean', 'null'] } },
    additionalProperties: false,
  },
  user: { type: ['string', 'null'] },
  model: { type: 'string' },
  // vLLM's extra sampling and request fields (entrypoints/openai/*/protocol.py)
  include_stop_str_in_output: { type: ['boolean', 'null'] },
  spaces_between_special_tokens: { type: ['boolean', 'null'] },
  truncate_prompt_tokens: { type: ['integer', 'null'], minimum: -1 },
  allowed_token_ids: { anyOf: [tokenIds, { type: 'null' }] },
  bad_words: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
  add_special_tokens: { type: ['boolean', 'null'] },
  priority: { type: ['integer', 'null'] },
  request_id: { type: ['string', 'null'], minLength: 1 },
  cache_salt: { type: ['string', 'null'], minLength: 1 },
  return_token_ids: { type: ['boolean', 'null'] },
  ...structuredOutputSchemas,
  // OpenAI's, accepted and not used
  metadata: { type: ['object', 'null'] },
  store: { type: ['boolean', 'null'] },
} as const;

export const completionsBody = {
  type: 'object',
  required: ['prompt'],
  properties: {
    ...sampling,
    prompt: {
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, items: { type: 'string' } },
        { ...tokenIds, minItems: 1 },
        { type: 'array', minItems: 1, items: { ...tokenIds, minItems: 1 } },
      ],
    },
    echo: { type: ['boolean', 'null'] },
    logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    best_of: { type: ['integer', 'null'], minimum: 1 },
    prompt_logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    suffix: { type: ['string', 'null'] },
  },
} as const;

/** a content part: text or image_url (openai-request.ts checks each kind's fields and refuses the rest by name) */
const contentPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' }, text: { type: 'string' } },
} as const;

/** OpenAI's function tool (ChatCompletionTool) */
const chatTool = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string', minLength: 1 }, description: { type: 'string' }, parameters: { type: 'object' }, strict: { type: ['boolean', 'null'] } },
    },
  },
} as const;

/** an assistant message's tool call, as the API returned it */
const toolCall = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string' },
    type: { const: 'function' },
    function: { type: 'object', required: ['name', 'arguments'], properties: { name: { type: 'string' }, arguments: { type: 'string' } } },
  },
} as const;

export const chatBody = {
  type: 'object',
  required: ['messages'],
  properties: {
    ...sampling,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        additionalProperties: false,
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
          content: { anyOf: [{ type: 'string' }, { type: 'array', items: contentPart }, { type: 'null' }] },
          name: { type: 'string' },
          tool_calls: { anyOf: [{ type: 'array', items: toolCall }, { type: 'null' }] },
          tool_call_id: { type: 'string' },
        },
      },
    },
    max_completion_tokens: { type: ['integer', 'null'], minimum: 1 },
    logprobs: { type: ['boolean', 'null'] },
    top_logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    prompt_logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    add_generation_prompt: { type: ['boolean', 'null'] },
    continue_final_message: { type: ['boolean', 'null'] },
    echo: { type: ['boolean', 'null'] },
    chat_template_kwargs: { type: ['object', 'null'] },
    reasoning_effort: { enum: [...REASONING_EFFORTS, null] },
    tools: { anyOf: [{ type: 'array', items: chatTool }, { type: 'null' }] },
    tool_choice: {
      anyOf: [
        { enum: ['none', 'auto', 'required', null] },
        { type: 'object', required: ['type', 'function'], properties: { type: { const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } },
      ],
    },
    parallel_tool_calls: { type: ['boolean', 'null'] },
  },
} as const;

/**
 * LMDeploy's /generate (lmdeploy/serve/openai/protocol.py GenerateReqInput): types only;
 * the ranges are checked in routes/generate-request.ts with LMDeploy's own messages.
 */
export const generateBody = {
  type: 'object',
  properties: {
    response_format: structuredOutputSchemas.response_format,
    session_id: { type: ['integer', 'null'] },
    prompt: { type: ['string', 'null'] },
    input_ids: { anyOf: [{ type: 'array', items: { type: 'integer' } }, { type: 'null' }] },
    image_data: {},
    return_logprob: { type: ['boolean', 'null'] },
    max_tokens: { type: 'integer' },
    stop,
    stop_token_ids: { anyOf: [{ type: 'array', items: { type: 'integer' } }, { type: 'null' }] },
    stream: { type: ['boolean', 'null'] },
    temperature: { type: ['number', 'null'] },
    repetition_penalty: { type: ['number', 'null'] },
    ignore_eos: { type: ['boolean', 'null'] },
    top_p: { type: ['number', 'null'] },
    top_k: { type: ['integer', 'null'] },
    min_p: { type: ['number', 'null'] },
    skip_special_tokens: { type: ['boolean', 'null'] },
    spaces_between_special_tokens: { type: ['boolean', 'null'] },
    include_stop_str_in_output: { type: ['boolean', 'null'] },
    return_routed_experts: { type: ['boolean', 'null'] },
    repetition_ngram_size: { type: 'integer', minimum: 0 },
    repetition_ngram_threshold: { type: 'integer', minimum: 0 },
    media_io_kwargs: { type: ['object', 'null'] },
    mm_processor_kwargs: { type: ['object', 'null'] },
    // loom's own
    seed: { type: ['integer', 'null'] },
  },
} as const;

/** LMDeploy's /abort_request (AbortRequest) */
export const abortBody = {
  type: 'object',
  properties: {
    abort_all: { type: 'boolean' },
    finished_reason: { type: ['object', 'null'] },
    abort_message: { type: ['string', 'null'] },
    session_id: { type: ['integer', 'null'] },
  },
} as const;

/** LMDeploy's /v1/encode (EncodeRequest) */
export const encodeBody = {
  type: 'object',
  required: ['input'],
  properties: {
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    do_preprocess: { type: ['boolean', 'null'] },
    add_bos: { type: ['boolean', 'null'] },
  },
} as const;

export const tokenizeBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    model: { type: 'string' },
    prompt: { type: 'string' },
    messages: chatBody.properties.messages,
    add_special_tokens: { type: 'boolean' },
    add_generation_prompt: { type: 'boolean' },
    return_token_strs: { type: ['boolean', 'null'] },
  },
  oneOf: [{ required: ['prompt'] }, { required: ['messages'] }],
} as const;

export const detokenizeBody = {
  type: 'object',
  required: ['tokens'],
  additionalProperties: false,
  properties: { model: { type: 'string' }, tokens: tokenIds },
} as const;
