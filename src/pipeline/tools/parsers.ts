// Tool-call parsers (vLLM's --tool-call-parser, vllm/tool_parsers/): the text a model writes
// to call tools, per family, as OpenAI tool calls. A parser names the markers that open a
// call (so a stream can hold the calls back) and takes a whole output apart; output it
// cannot parse stays content, as in vLLM.
import { rawDecode } from './json-scan.js';
import { parseGemma4Calls } from './gemma4.js';
import { parsePythonicCall, parsePythonicList } from './pythonic.js';
import { harmonyMarkers, parseHarmonyCalls } from './harmony-calls.js';
import { isHarmonyTemplate } from '../reasoning/harmony.js';

export const TOOL_CALL_PARSERS = ['hermes', 'llama3_json', 'mistral', 'phi4_mini_json', 'pythonic', 'gemma4', 'openai'] as const;
export type ToolCallParserName = (typeof TOOL_CALL_PARSERS)[number];

export interface ParsedToolCall {
  name: string;
  /** the arguments as a JSON string (OpenAI's `function.arguments`) */
  arguments: string;
}

export interface ToolParse {
  /** the text before the calls ('' when none) */
  content: string;
  calls: ParsedToolCall[];
}

export interface ToolCallParser {
  readonly name: ToolCallParserName;
  /** markers that open tool calls anywhere in the output */
  readonly markers: readonly string[];
  /** markers that open tool calls only at the start of the output (after whitespace) */
  readonly leadMarkers: readonly string[];
  /** the output taken apart; no calls when it holds none or they do not parse */
  parse(text: string): ToolParse;
}

const noCalls = (text: string): ToolParse => ({ content: text, calls: [] });

/** {name, arguments|parameters} as a call, or null */
function callOf(v: unknown): ParsedToolCall | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (typeof o.name !== 'string' || o.name === '') return null;
  const args = o.arguments ?? o.parameters ?? {};
  return { name: o.name, arguments: typeof args === 'string' ? args : JSON.stringify(args) };
}

function callsOf(values: readonly unknown[]): ParsedToolCall[] | null {
  const calls = values.map(callOf);
  return calls.length > 0 && calls.every((c) => c !== null) ? (calls as ParsedToolCall[]) : null;
}

/** Hermes / Qwen 2.5+ / Qwen 3: <tool_call>{"name": …, "arguments": …}</tool_call>, repeated */
const hermes: ToolCallParser = {
  name: 'hermes',
  markers: ['<tool_call>'],
  leadMarkers: [],
  parse(text) {
    const at = text.indexOf('<tool_call>');
    if (at < 0) return noCalls(text);
    const values: unknown[] = [];
    for (const m of text.slice(at).matchAll(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g)) {
      const body = m[1]!.trim();
      const v = rawDecode(body);
      if (!v || body.slice(v.end).trim() !== '') return noCalls(text);
      values.push(v.value);
    }
    const calls = callsOf(values);
    return calls ? { content: text.slice(0, at), calls } : noCalls(text);
  },
};

/**
 * Llama 3.1+/3.2/3.3: the output is a JSON call (or several joined by ";"), maybe after
 * <|python_tag|>; or, after <|python_tag|>, a built-in tool's call in Python syntax
 * (Llama 3.1's template: `brave_search.call(query="…")`), read as a call to that tool.
 */
const llama3Json: ToolCallParser = {
  name: 'llama3_json',
  markers: [],
  leadMarkers: ['<|python_tag|>', '{'],
  parse(text) {
    let body = text.trimStart();
    const tagged = body.startsWith('<|python_tag|>');
    if (tagged) body = body.slice('<|python_tag|>'.length);
    if (!body.trimStart().startsWith('{')) {
      const builtIn = tagged ? parsePythonicCall(body) : null;
      return builtIn ? { content: '', calls: [builtIn] } : noCalls(text);
    }
    const values: unknown[] = [];
    let at = 0;
    for (;;) {
      const v = rawDecode(body, at);
      if (!v) return noCalls(text);
      values.push(v.value);
      const rest = body.slice(v.end).trimStart();
      if (rest === '') break;
      if (!rest.startsWith(';')) return noCalls(text);
      at = body.length - rest.length + 1;
    }
    const calls = callsOf(values);
    return calls ? { content: '', calls } : noCalls(text);
  },
};

/**
 * Mistral: [TOOL_CALLS] then a JSON array of calls (tokenizer v2/v3), or, from tokenizer v11
 * on, [TOOL_CALLS]name[ARGS]{…} once per call.
 */
const mistral: ToolCallParser = {
  name: 'mistral',
  markers: ['[TOOL_CALLS]'],
  leadMarkers: [],
  parse(text) {
    const at = text.indexOf('[TOOL_CALLS]');
    if (at < 0) return noCalls(text);
    const after = text.slice(at + '[TOOL_CALLS]'.length);
    let calls: ParsedToolCall[] | null;
    if (after.trimStart().startsWith('[')) {
      const v = rawDecode(after);
      calls = v && Array.isArray(v.value) && after.slice(v.end).trim() === '' ? callsOf(v.value) : null;
    } else {
      calls = [];
      for (const part of after.split('[TOOL_CALLS]')) {
        const sep = part.indexOf('[ARGS]');
        const args = sep < 0 ? null : rawDecode(part, sep + '[ARGS]'.length);
        const name = part.slice(0, Math.max(sep, 0)).trim();
        if (!args || name === '' || part.slice(args.end).trim() !== '') {
          calls = null;
          break;
        }
        calls.push({ name, arguments: JSON.stringify(args.value) });
      }
    }
    return calls ? { content: text.slice(0, at), calls } : noCalls(text);
  },
};

/** Phi-4-mini: functools[{"name": …, "arguments": …}, …] */
const phi4MiniJson: ToolCallParser = {
  name: 'phi4_mini_json',
  markers: ['functools['],
  leadMarkers: [],
  parse(text) {
    const at = text.indexOf('functools[');
    if (at < 0) return noCalls(text);
    const v = rawDecode(text, at + 'functools'.length);
    const calls = v && Array.isArray(v.value) && text.slice(v.end).trim() === '' ? callsOf(v.value) : null;
    return calls ? { content: text.slice(0, at), calls } : noCalls(text);
  },
};

/**
 * vLLM's `pythonic` (Llama 3.2 1B/3B, ToolACE, and Gemma 3, which has no tool tokens of its
 * own: vLLM serves it with this parser and examples/tool_chat_template_gemma3_pythonic.jinja):
 * the whole output is a Python list of calls, `[get_weather(city="Paris"), get_time()]`.
 */
const pythonic: ToolCallParser = {
  name: 'pythonic',
  markers: [],
  leadMarkers: ['['],
  parse(text) {
    const calls = parsePythonicList(text);
    return calls ? { content: '', calls } : noCalls(text);
  },
};

/** Gemma 4: <|tool_call>call:name{key:<|"|>text<|"|>,…}<tool_call|>, repeated (gemma4.ts) */
const gemma4: ToolCallParser = {
  name: 'gemma4',
  markers: ['<|tool_call>'],
  leadMarkers: [],
  parse(text) {
    return parseGemma4Calls(text) ?? noCalls(text);
  },
};

/** vLLM's `openai` (gpt-oss's harmony format): a commentary message to functions.NAME (harmony-calls.ts) */
const openai: ToolCallParser = { name: 'openai', markers: harmonyMarkers, leadMarkers: [], parse: parseHarmonyCalls };

const PARSERS: Record<ToolCallParserName, ToolCallParser> = { hermes, llama3_json: llama3Json, mistral, phi4_mini_json: phi4MiniJson, pythonic, gemma4, openai };

export function toolCallParser(name: ToolCallParserName): ToolCallParser {
  return PARSERS[name];
}

/** The parser a chat template's own tool-call syntax implies, if any. */
export function toolCallParserForTemplate(template: string | undefined): ToolCallParser | undefined {
  if (template === undefined) return undefined;
  // Gemma 4's template writes calls as '<|tool_call>call:' (llama.cpp detects it by this string)
  if (template.includes("'<|tool_call>call:'")) return gemma4;
  if (isHarmonyTemplate(template)) return openai;
  if (template.includes('<tool_call>')) return hermes;
  if (template.includes('[TOOL_CALLS]')) return mistral;
  // the pythonic templates (vLLM's Llama 3.2 / Gemma 3 examples) show the list as "[func_name1(…"
  if (template.includes('[func_name1(')) return pythonic;
  if (template.includes('<|python_tag|>') || template.includes('ipython')) return llama3Json;
  if (template.includes('functools')) return phi4MiniJson;
  return undefined;
}
