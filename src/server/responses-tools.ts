// The Responses API's tools as chat's function tools (what the template and the tool-call
// parser know). `function` tools map one to one. `custom` tools (free-form text input, as
// Codex's apply_patch can be) become a function with one string argument, `input`: the model
// calls them as it calls any function, and the call comes back as a custom_tool_call whose
// input is that string. A custom tool's grammar format is enforced where loom's grammar
// engine can take it: `regex` becomes the argument's JSON-schema `pattern`, anchored (binding
// when a call is forced); `lark` is refused by name, as xgrammar reads no Lark. A `namespace`
// groups function and custom tools (Codex's sub-agent tools come so): its tools are offered
// under their own names, and a call to one comes back with the namespace named.
import type { ChatTool, ToolChoice } from '../pipeline/tools/request.js';
import { HttpError } from './errors.js';

/** A Responses tool: loom runs `function` and `custom` tools; the other kinds are OpenAI's hosted ones. */
export interface ResponsesTool {
  type: string;
  name?: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
  /** custom tools: how the input is written */
  format?: { type: string; syntax?: string; definition?: string } | null;
  /** namespace tools: the tools it groups */
  tools?: ResponsesTool[] | null;
}

export type ResponsesToolChoice = string | { type: string; name?: string } | null | undefined;

/** the single argument a custom tool's call carries its free-form input in */
export const CUSTOM_INPUT = 'input';

function customParameters(t: ResponsesTool, where: string): Record<string, unknown> {
  const f = t.format;
  const input: Record<string, unknown> = { type: 'string', description: 'The tool\'s input, as free-form text' };
  if (f != null && f.type !== 'text') {
    if (f.type !== 'grammar') throw new HttpError(400, `${where}.format: type ${JSON.stringify(f.type)} is not one of text, grammar`, 'invalid_request_error', 'tools');
    if (f.syntax === 'lark') throw new HttpError(400, `${where}.format: grammar syntax "lark" is not supported: loom's grammar engine (xgrammar) takes "regex"; send {"type": "text"} for free-form input`, 'invalid_request_error', 'tools');
    if (f.syntax !== 'regex') throw new HttpError(400, `${where}.format: grammar syntax ${JSON.stringify(f.syntax)} is not supported (regex)`, 'invalid_request_error', 'tools');
    if (typeof f.definition !== 'string' || f.definition === '') throw new HttpError(400, `${where}.format.definition: a regex grammar needs its definition`, 'invalid_request_error', 'tools');
    // a JSON-schema pattern matches anywhere in the string; the tool's regex is the whole input
    input['pattern'] = `^(?:${f.definition})$`;
  }
  return { type: 'object', properties: { [CUSTOM_INPUT]: input }, required: [CUSTOM_INPUT], additionalProperties: false };
}

/** what a call's name says about its output item */
export type ToolKinds = Pick<ResponsesTools, 'custom' | 'namespaces'>;

export interface ResponsesTools {
  /** function and custom tools, as chat's function tools (null: none) */
  readonly chat: ChatTool[] | null;
  /** the names of the custom tools (their calls come back as custom_tool_call items) */
  readonly custom: ReadonlySet<string>;
  /** the namespace of each tool offered from one, by name (its calls name it) */
  readonly namespaces: ReadonlyMap<string, string>;
}

/**
 * Function and custom tools in chat's shape, those grouped in namespaces included. Tools of
 * other types (OpenAI's hosted tools: web_search, which Codex CLI sends, file_search,
 * code_interpreter, computer_use, image_generation, mcp, local_shell, apply_patch) are left
 * out, as vLLM and llama-server leave them: loom cannot run them, and refusing would turn such
 * clients away.
 */
export function responsesTools(tools: readonly ResponsesTool[] | null | undefined): ResponsesTools {
  if (tools == null) return { chat: null, custom: new Set(), namespaces: new Map() };
  const chat: ChatTool[] = [];
  const custom = new Set<string>();
  const namespaces = new Map<string, string>();
  const names = new Set<string>();
  const add = (t: ResponsesTool, where: string, namespace?: string): void => {
    if (t.type !== 'function' && t.type !== 'custom') return;
    if (typeof t.name !== 'string' || t.name === '') throw new HttpError(400, `${where}: a ${t.type} tool needs a name`, 'invalid_request_error', 'tools');
    // the model calls by name alone: a namespaced tool whose name is taken already is left out
    if (namespace !== undefined && names.has(t.name)) return;
    names.add(t.name);
    if (namespace !== undefined) namespaces.set(t.name, namespace);
    const description = t.description != null ? { description: t.description } : {};
    if (t.type === 'custom') {
      custom.add(t.name);
      chat.push({ type: 'function', function: { name: t.name, ...description, parameters: customParameters(t, where) } });
    } else {
      chat.push({ type: 'function', function: { name: t.name, ...description, ...(t.parameters != null && { parameters: t.parameters }), ...(t.strict != null && { strict: t.strict }) } });
    }
  };
  tools.forEach((t, i) => {
    if (t.type !== 'namespace') return add(t, `tools[${i}]`);
    if (typeof t.name !== 'string' || t.name === '') throw new HttpError(400, `tools[${i}]: a namespace needs a name`, 'invalid_request_error', 'tools');
    (t.tools ?? []).forEach((inner, j) => add(inner, `tools[${i}].tools[${j}]`, t.name));
  });
  return { chat, custom, namespaces };
}

/** function tools only (the chat shape of a request's top-level `function` tools) */
export const functionTools = (tools: readonly ResponsesTool[] | null | undefined): ChatTool[] | null => responsesTools(tools?.filter((t) => t.type === 'function')).chat;

export function toolChoice(choice: ResponsesToolChoice, hasTools: boolean): ToolChoice | null {
  if (choice == null) return null;
  if (typeof choice === 'string') {
    if (choice === 'none' || choice === 'auto' || choice === 'required') return choice === 'auto' && !hasTools ? null : choice;
    throw new HttpError(400, `tool_choice ${JSON.stringify(choice)} is not one of none, auto, required`, 'invalid_request_error', 'tool_choice');
  }
  if ((choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  throw new HttpError(400, `tool_choice of type ${JSON.stringify(choice.type)} is not supported (none, auto, required, a function or a custom tool)`, 'invalid_request_error', 'tool_choice');
}

/** a custom tool call's input from the function-call arguments it was written as */
export function customInput(args: string): string {
  try {
    const v = JSON.parse(args) as unknown;
    if (typeof v === 'object' && v !== null && typeof (v as Record<string, unknown>)[CUSTOM_INPUT] === 'string') return (v as Record<string, string>)[CUSTOM_INPUT]!;
  } catch {
    // not JSON: the model wrote the call badly; its text is the best input there is
  }
  return args;
}
