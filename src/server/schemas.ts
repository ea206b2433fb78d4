// JSON schemas of the request bodies (validated by fastify's ajv with no coercion and no
// silent removal: a wrong type or an unknown field is a 400 naming the field).

const stop = {
  anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 16 }, { type: 'null' }],
} as const;
const tokenIds = { type: 'array', items: { type: 'integer', minimum: 0 } } as const;

/** sampling fields shared by /v1/completions and /v1/chat/completions (OpenAI + vLLM extras) */
const sampling = {
  max_tokens: { type: ['integer', 'null'], minimum: 1 },
  temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
  top_p: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: 1 },
  top_k: { type: ['integer', 'null'], minimum: -1 },
  min_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
  n: { type: ['integer', 'null'], minimum: 1, maximum: 16 },
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
} as const;

export const completionsBody = {
  type: 'object',
  required: ['model', 'prompt'],
  additionalProperties: false,
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

const contentPart = {
  type: 'object',
  required: ['type', 'text'],
  additionalProperties: false,
  properties: { type: { const: 'text' }, text: { type: 'string' } },
} as const;

export const chatBody = {
  type: 'object',
  required: ['model', 'messages'],
  additionalProperties: false,
  properties: {
    ...sampling,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        additionalProperties: false,
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant'] },
          content: { anyOf: [{ type: 'string' }, { type: 'array', items: contentPart }] },
          name: { type: 'string' },
        },
      },
    },
    max_completion_tokens: { type: ['integer', 'null'], minimum: 1 },
    logprobs: { type: ['boolean', 'null'] },
    top_logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    add_generation_prompt: { type: ['boolean', 'null'] },
    chat_template_kwargs: { type: ['object', 'null'] },
  },
} as const;

/** LMDeploy's native /generate */
export const generateBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    prompt: { type: 'string' },
    input_ids: { ...tokenIds, minItems: 1 },
    max_tokens: { type: 'integer', minimum: 1 },
    stop,
    stop_token_ids: tokenIds,
    temperature: { type: 'number', minimum: 0, maximum: 2 },
    top_p: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: -1 },
    min_p: { type: 'number', minimum: 0, maximum: 1 },
    repetition_penalty: { type: 'number', exclusiveMinimum: 0 },
    ignore_eos: { type: 'boolean' },
    skip_special_tokens: { type: 'boolean' },
    return_logprob: { type: 'boolean' },
    stream: { type: 'boolean' },
    seed: { type: 'integer' },
    session_id: { type: 'integer' },
  },
  oneOf: [{ required: ['prompt'] }, { required: ['input_ids'] }],
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
  },
  oneOf: [{ required: ['prompt'] }, { required: ['messages'] }],
} as const;

export const detokenizeBody = {
  type: 'object',
  required: ['tokens'],
  additionalProperties: false,
  properties: { model: { type: 'string' }, tokens: tokenIds },
} as const;
