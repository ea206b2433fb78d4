// OpenAI Responses request bodies (POST /v1/responses, /v1/responses/input_tokens) as one
// chat RequestSpec: the input items become the chat messages /v1/chat/completions would
// get for the same conversation (so the template renders the same tokens), the tools
// OpenAI's function shape (responses-tools.ts), text.format a response_format. A final
// compaction_trigger item asks for a summary instead of a reply (responses-compaction.ts).
// Field names and rules as the openai SDK's types (resources/responses/responses.d.ts) and
// vLLM's ResponsesRequest.
import { reasoningEffortVars } from './reasoning-effort.js';
import { canonicalJsonValue } from '../pipeline/canonical-json.js';
import type { RequestSpec } from '../pipeline/request.js';
import type { ToolFields } from '../pipeline/tools/request.js';
import type { ChatMessage } from '../tokenizer/chat-template.js';
import type { ServerContext } from './context.js';
import { checkModel, imageList, noteIgnoredFields } from './context.js';
import { HttpError } from './errors.js';
import type { ImageList } from './image-list.js';
import { DEFAULT_COMPACTION_TOKENS, compactionMessage, compactionRequest, compactionSummary } from './responses-compaction.js';
import { CUSTOM_INPUT, responsesTools, toolChoice } from './responses-tools.js';
import type { ResponsesTool, ResponsesToolChoice, ToolKinds } from './responses-tools.js';
import { grammarOfBody } from './structured-output.js';
import type { ResponseFormat } from './structured-output.js';

/** One input item (the SDK's ResponseInputItem: the kinds loom reads; others are refused). */
export interface InputItem {
  type?: string;
  id?: string;
  role?: string;
  content?: string | ContentPart[] | null;
  /** function_call */
  call_id?: string;
  name?: string;
  arguments?: string;
  /** function_call_output, custom_tool_call_output */
  output?: string | ContentPart[];
  /** custom_tool_call */
  input?: string;
  /** reasoning */
  summary?: { type: string; text: string }[];
  encrypted_content?: string | null;
  status?: string;
}

export interface ContentPart {
  type: string;
  text?: string;
  /** input_image: a data URL or an http(s) URL (file_id is refused); detail is accepted and not used */
  image_url?: string | null;
  file_id?: string | null;
  detail?: string;
}

export interface ResponsesBody {
  model: string;
  input?: string | InputItem[];
  instructions?: string | null;
  previous_response_id?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  tools?: ResponsesTool[] | null;
  tool_choice?: ResponsesToolChoice;
  parallel_tool_calls?: boolean | null;
  text?: { format?: { type: string; name?: string; schema?: unknown; strict?: boolean | null; description?: string } | null; verbosity?: string | null } | null;
  reasoning?: { effort?: string | null; summary?: string | null } | null;
  store?: boolean | null;
  stream?: boolean | null;
  metadata?: Record<string, string> | null;
  include?: string[] | null;
  /** alternatives per output token (0-20): with include "message.output_text.logprobs", or alone */
  top_logprobs?: number | null;
  truncation?: string | null;
  background?: boolean | null;
  user?: string;
  // vLLM's sampling extras on ResponsesRequest
  top_k?: number | null;
  min_p?: number | null;
  repetition_penalty?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  ignore_eos?: boolean | null;
  cache_salt?: string | null;
  request_id?: string | null;
  chat_template_kwargs?: Record<string, unknown> | null;
}

/** fields loom reads or knowingly accepts without effect (reported once otherwise) */
const KNOWN = new Set([
  ...'model input instructions previous_response_id max_output_tokens temperature top_p top_logprobs tools tool_choice parallel_tool_calls text reasoning store stream metadata include truncation background user'.split(' '),
  ...'top_k min_p repetition_penalty seed stop ignore_eos cache_salt request_id chat_template_kwargs'.split(' '),
  // a hint for OpenAI's cache routing: loom's prefix cache needs none
  'prompt_cache_key',
  'service_tier',
  'safety_identifier',
  'stream_options',
]);

/** A conversation so far: the items the template renders (a stored response's input and output). */
export type Conversation = readonly InputItem[];

/** An input_image part as IMAGE_MARKER, its image added to `images`. */
function imageMarker(p: ContentPart, where: string, images: ImageList | undefined): string {
  if (p.file_id != null) throw new HttpError(400, `${where}: input_image by file_id is not supported (loom has no Files API): send image_url, a data URL or an http(s) URL`, 'invalid_request_error', 'input');
  if (typeof p.image_url !== 'string' || p.image_url === '') throw new HttpError(400, `${where}: an input_image needs image_url (a data URL or an http(s) URL)`, 'invalid_request_error', 'input');
  if (!images) throw new HttpError(400, `${where}: images are not accepted here`, 'invalid_request_error', 'input');
  return images.addUrl(p.image_url, `${where}.image_url`);
}

/** Content parts as one text, joined as they come; images as markers (into `images`). */
const text = (parts: string | ContentPart[] | null | undefined, where: string, images: ImageList | undefined): string => {
  if (parts == null) return '';
  if (typeof parts === 'string') return parts;
  return parts
    .map((p, j) => {
      if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text' || p.type === 'summary_text' || p.type === 'reasoning_text') return p.text ?? '';
      if (p.type === 'refusal') return (p as { refusal?: string }).refusal ?? '';
      if (p.type === 'input_image') return imageMarker(p, `${where}.content[${j}]`, images);
      throw new HttpError(400, `${where}: content of type ${JSON.stringify(p.type)} is not supported (text and input_image)`, 'invalid_request_error', 'input');
    })
    .join('');
};

/** The input as items: a string is one user message. */
export function inputItems(input: ResponsesBody['input']): InputItem[] {
  if (input == null) return [];
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  if (!Array.isArray(input)) throw new HttpError(400, 'input must be a string or a list of items', 'invalid_request_error', 'input');
  return input;
}

/**
 * Items as the chat messages /v1/chat/completions would carry: developer → system; an
 * assistant's text, reasoning and the function calls after it are one assistant turn (its
 * tool_calls, arguments as objects with sorted keys); a function_call_output is a `tool`
 * message. The system text before the first other message (instructions first) is one
 * system message; later system text stays where it was sent, so earlier turns render the same.
 */
export function itemsToMessages(instructions: string | null | undefined, items: Conversation, images?: ImageList): ChatMessage[] {
  const out: ChatMessage[] = [];
  const lead: string[] = instructions ? [instructions] : [];
  let leading = true;
  /** the assistant turn being assembled (text, reasoning, calls) */
  let turn: ChatMessage | undefined;
  const push = (m: ChatMessage): void => {
    if (leading && lead.length > 0) out.push({ role: 'system', content: lead.join('\n\n') });
    leading = false;
    out.push(m);
  };
  const assistant = (): ChatMessage => {
    if (!turn) {
      turn = { role: 'assistant', content: '' };
      push(turn);
    }
    return turn;
  };
  items.forEach((item, i) => {
    const where = `input[${i}]`;
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item.role === 'developer' ? 'system' : item.role;
        if (role !== 'user' && role !== 'system' && role !== 'assistant') {
          throw new HttpError(400, `${where}: role ${JSON.stringify(item.role)} is not one of user, system, developer, assistant`, 'invalid_request_error', 'input');
        }
        const content = text(item.content, where, images);
        if (role === 'system' && leading) {
          lead.push(content);
          return;
        }
        if (role === 'assistant') {
          const t = turn && !turn.tool_calls ? turn : ((turn = undefined), assistant());
          t.content += content;
          return;
        }
        turn = undefined;
        push({ role, content });
        return;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string') {
          throw new HttpError(400, `${where}: a function_call needs call_id, name and arguments`, 'invalid_request_error', 'input');
        }
        let args: unknown;
        try {
          args = canonicalJsonValue(JSON.parse(item.arguments));
        } catch {
          throw new HttpError(400, `${where}: function_call arguments are not JSON`, 'invalid_request_error', 'input');
        }
        const t = assistant();
        t.tool_calls = [...(t.tool_calls ?? []), { id: item.call_id, type: 'function', function: { name: item.name, arguments: args } }];
        return;
      }
      case 'custom_tool_call': {
        // rendered as the function call it was made as (responses-tools.ts)
        if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.input !== 'string') {
          throw new HttpError(400, `${where}: a custom_tool_call needs call_id, name and input`, 'invalid_request_error', 'input');
        }
        const t = assistant();
        t.tool_calls = [...(t.tool_calls ?? []), { id: item.call_id, type: 'function', function: { name: item.name, arguments: { [CUSTOM_INPUT]: item.input } } }];
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (typeof item.call_id !== 'string') throw new HttpError(400, `${where}: a ${type} needs call_id`, 'invalid_request_error', 'input');
        turn = undefined;
        push({ role: 'tool', tool_call_id: item.call_id, content: text(item.output, where, images) });
        return;
      }
      case 'compaction':
        turn = undefined;
        push(compactionMessage(compactionSummary(item.encrypted_content, where)));
        return;
      case 'compaction_trigger':
        throw new HttpError(400, `${where}: a compaction_trigger must be the last input item`, 'invalid_request_error', 'input');
      case 'reasoning':
        // reasoning is not rendered back, as /v1/chat/completions takes none in its messages
        // (templates such as Qwen3's drop earlier turns' reasoning anyway); encrypted_content
        // is never set by loom, so none comes back to decrypt
        return;
      default:
        throw new HttpError(400, `${where}: input items of type ${JSON.stringify(item.type)} are not supported (message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning, compaction, compaction_trigger)`, 'invalid_request_error', 'input');
    }
  });
  if (leading && lead.length > 0) out.push({ role: 'system', content: lead.join('\n\n') });
  return out;
}

function responseFormat(format: NonNullable<ResponsesBody['text']>['format']): ResponseFormat | null {
  if (format == null || format.type === 'text') return null;
  if (format.type === 'json_schema') return { type: 'json_schema', json_schema: { ...(format.name !== undefined && { name: format.name }), schema: format.schema, strict: format.strict ?? null } };
  if (format.type === 'json_object') return { type: 'json_object' };
  throw new HttpError(400, `text.format of type ${JSON.stringify(format.type)} is not supported (text, json_object, json_schema)`, 'invalid_request_error', 'text.format');
}

/** reasoning.effort to the template (reasoning-effort.ts) */
function reasoningVars(reasoning: ResponsesBody['reasoning']): Record<string, unknown> {
  return reasoningEffortVars(reasoning?.effort);
}

export interface ResponsesPlan {
  readonly spec: RequestSpec;
  /** the items this request adds to the conversation (its input, a compaction_trigger left out), after the previous response's */
  readonly items: InputItem[];
  readonly tools: ToolFields;
  /** which tools are custom (their calls come back as custom_tool_call items) or in a namespace (their calls name it) */
  readonly toolKinds: ToolKinds;
  /** set when the input ended with a compaction_trigger: the output is one compaction item */
  readonly compaction: boolean;
}

const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

/** the engine's logprobs count: alternatives per token when output_text logprobs are asked for, else none */
function logprobsOf(body: ResponsesBody): number | null {
  const n = body.top_logprobs;
  if (n != null && !(Number.isInteger(n) && n >= 0 && n <= 20)) throw new HttpError(400, 'top_logprobs must be an integer from 0 to 20', 'invalid_request_error', 'top_logprobs');
  return body.include?.includes(LOGPROBS_INCLUDE) || (n ?? 0) > 0 ? (n ?? 0) : null;
}

/** The body (after a previous response's conversation, `history`) as the pipeline's chat request. */
export async function responsesSpec(ctx: ServerContext, body: ResponsesBody, history: Conversation, where = '/v1/responses'): Promise<ResponsesPlan> {
  checkModel(ctx, body.model);
  noteIgnoredFields(ctx, body, KNOWN, where);
  if (body.background) throw new HttpError(400, 'background responses are not supported', 'invalid_request_error', 'background');
  const given = inputItems(body.input);
  const compaction = given.at(-1)?.type === 'compaction_trigger';
  const items = compaction ? given.slice(0, -1) : given;
  const list = imageList(ctx);
  const messages = itemsToMessages(body.instructions, [...history, ...items], list);
  if (messages.length === 0) throw new HttpError(400, 'input must not be empty', 'invalid_request_error', 'input');
  const images = await list.forMessages(messages, 'input');
  // compacting: the tools stay in the prompt (its prefix is the cached conversation's), none is called
  if (compaction) messages.push(compactionRequest());
  const { chat: fns, custom, namespaces } = responsesTools(body.tools);
  const hasTools = (fns?.length ?? 0) > 0;
  const tools: ToolFields = { tools: hasTools ? fns : null, tool_choice: compaction ? (hasTools ? 'none' : null) : toolChoice(body.tool_choice, hasTools), parallel_tool_calls: body.parallel_tool_calls ?? null };
  const rf = compaction ? null : responseFormat(body.text?.format);
  const structured = grammarOfBody({ response_format: rf });
  const topK = body.top_k ?? 0;
  const templateVars = { ...reasoningVars(body.reasoning), ...body.chat_template_kwargs };
  return {
    items,
    tools,
    toolKinds: { custom, namespaces },
    compaction,
    spec: {
      prompts: [{ messages, addGenerationPrompt: true, templateVars, ...(images && { images }) }],
      tools,
      promptParam: 'input',
      addSpecialTokens: false,
      parseSpecial: true,
      maxTokens: body.max_output_tokens ?? (compaction ? DEFAULT_COMPACTION_TOKENS : null),
      maxTokensParam: 'max_output_tokens',
      defaultMaxTokens: 'context',
      idPrefix: 'resp',
      sampling: {
        temperature: body.temperature ?? 1,
        topP: body.top_p ?? 1,
        topK: topK < 0 ? 0 : topK,
        minP: body.min_p ?? 0,
        n: 1,
        seed: body.seed ?? null,
        repetitionPenalty: body.repetition_penalty ?? 1,
        ignoreEos: body.ignore_eos ?? false,
        logprobs: logprobsOf(body),
        promptLogprobs: null,
        grammar: structured?.grammar ?? null,
        cacheSalt: body.cache_salt ?? null,
      },
      paramNames: { grammar: 'text.format', logprobs: 'top_logprobs' },
      stop: body.stop ?? null,
      clientRequestId: body.request_id ?? null,
    },
  };
}
