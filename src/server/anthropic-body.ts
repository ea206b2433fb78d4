// The Anthropic Messages API's request bodies (POST /v1/messages, /v1/messages/count_tokens):
// their TypeScript shapes and the JSON schemas the route validates them with (types only;
// unknown fields pass). anthropic-request.ts maps a body to a RequestSpec.

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
}

/** a content block of a message (the kinds loom reads; the rest are refused or skipped by name) */
export interface AnthropicBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | AnthropicBlock[];
  is_error?: boolean;
  thinking?: string;
  /** image: base64 data with its media type, or a URL */
  source?: { type: string; media_type?: string; data?: string; url?: string };
}

export interface AnthropicMessage {
  role: 'user' | 'assistant' | 'system';
  content: string | AnthropicBlock[];
}

export interface AnthropicTool {
  type?: string;
  name: string;
  description?: string;
  input_schema?: Record<string, unknown>;
  strict?: boolean;
}

export interface AnthropicBody {
  model: string;
  messages: AnthropicMessage[];
  max_tokens?: number;
  system?: string | AnthropicTextBlock[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stream?: boolean;
  tools?: AnthropicTool[];
  tool_choice?: { type: 'auto' | 'any' | 'tool' | 'none'; name?: string; disable_parallel_tool_use?: boolean };
  thinking?: { type: 'enabled' | 'disabled' | 'adaptive'; budget_tokens?: number };
  metadata?: Record<string, unknown>;
  /** structured outputs: `format` a JSON schema the text must match (`output_format` in the beta that preceded it) */
  output_config?: { format?: { type: string; schema?: unknown } | null; [k: string]: unknown };
  output_format?: { type: string; schema?: unknown } | null;
}

const block = { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } as const;

/** types only: unknown fields pass (Claude Code sends several loom has no use for) */
export const messagesBody = {
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  properties: {
    model: { type: 'string' },
    max_tokens: { type: 'integer', minimum: 1 },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: { role: { enum: ['user', 'assistant', 'system'] }, content: { anyOf: [{ type: 'string' }, { type: 'array', items: block }] } },
      },
    },
    system: { anyOf: [{ type: 'string' }, { type: 'array', items: block }] },
    stop_sequences: { type: 'array', items: { type: 'string' } },
    temperature: { type: 'number', minimum: 0 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: 0 },
    stream: { type: 'boolean' },
    tools: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 }, description: { type: 'string' }, input_schema: { type: 'object' } } } },
    tool_choice: { type: 'object', required: ['type'], properties: { type: { enum: ['auto', 'any', 'tool', 'none'] }, name: { type: 'string' }, disable_parallel_tool_use: { type: 'boolean' } } },
    thinking: { type: 'object', required: ['type'], properties: { type: { enum: ['enabled', 'disabled', 'adaptive'] }, budget_tokens: { type: 'integer' } } },
    metadata: { type: 'object' },
  },
} as const;

export const countTokensBody = { ...messagesBody, required: ['model', 'messages'] } as const;
