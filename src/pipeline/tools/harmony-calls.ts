// vLLM's `openai` tool parser (gpt-oss): a harmony message addressed to functions.NAME is a call
// to NAME, its body the JSON arguments. The harmony splitter (reasoning/harmony.ts) passes each
// such message on as `to=functions.NAME<|message|>ARGS<|call|>`; the raw output, read without
// that splitter, holds the same recipient and body inside its header markup, which this reads too.
import { rawDecode } from './json-scan.js';
import type { ParsedToolCall, ToolParse } from './parsers.js';

const MARKER = 'to=functions.';
const CALL = /to=functions\.([^\s<]+)[^]*?<\|message\|>([^]*?)(?:<\|call\|>|<\|end\|>|$)/g;

export const harmonyMarkers: readonly string[] = [MARKER];

export function parseHarmonyCalls(text: string): ToolParse {
  const at = text.indexOf(MARKER);
  if (at < 0) return { content: text, calls: [] };
  const calls: ParsedToolCall[] = [];
  for (const m of text.slice(at).matchAll(CALL)) {
    const body = m[2]!.trim();
    const v = rawDecode(body);
    if (!v || body.slice(v.end).trim() !== '' || typeof v.value !== 'object' || v.value === null || Array.isArray(v.value)) return { content: text, calls: [] };
    calls.push({ name: m[1]!, arguments: JSON.stringify(v.value) });
  }
  // content before the first call, with any header markup that opened it left out
  const before = text.slice(0, at).replace(/(?:<\|start\|>assistant)?(?:<\|channel\|>\s*commentary\s*)?$/, '');
  return calls.length > 0 ? { content: before, calls } : { content: text, calls: [] };
}
