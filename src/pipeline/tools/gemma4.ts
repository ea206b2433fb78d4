// Gemma 4's tool calls, as its chat template writes them (llama.cpp's common/parsers/gemma4.cpp
// reads the same): `<|tool_call>call:NAME{key:value,…}<tool_call|>`, once per call, where a
// value is a string between <|"|> quotes, a {…} of bare keys, a […] list, a number, true,
// false or null. The arguments become JSON text (numbers kept as written). The template
// writes an assistant turn's text after its calls, so text there is content as well.
import type { ParsedToolCall, ToolParse } from './parsers.js';

const OPEN = '<|tool_call>call:';
const CLOSE = '<tool_call|>';
const QUOTE = '<|"|>';

interface Read {
  json: string;
  end: number;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return i;
}

/** one value at i, as JSON text; null when it does not parse */
function readValue(text: string, i: number): Read | null {
  i = skipSpace(text, i);
  if (text.startsWith(QUOTE, i)) {
    const close = text.indexOf(QUOTE, i + QUOTE.length);
    if (close < 0) return null;
    return { json: JSON.stringify(text.slice(i + QUOTE.length, close)), end: close + QUOTE.length };
  }
  if (text[i] === '{') return readDict(text, i);
  if (text[i] === '[') return readList(text, i);
  const m = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 64));
  return m ? { json: m[0], end: i + m[0].length } : null;
}

/** {key:value,…}: keys bare (or quoted, as the template writes a nested mapping's) */
function readDict(text: string, i: number): Read | null {
  const parts: string[] = [];
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return { json: '{}', end: i + 1 };
  for (;;) {
    const colon = text.indexOf(':', i);
    if (colon < 0) return null;
    let key = text.slice(i, colon).trim();
    if (key.startsWith(QUOTE) && key.endsWith(QUOTE) && key.length >= 2 * QUOTE.length) key = key.slice(QUOTE.length, -QUOTE.length);
    if (key === '' || key.includes('}')) return null;
    const v = readValue(text, colon + 1);
    if (!v) return null;
    parts.push(`${JSON.stringify(key)}:${v.json}`);
    i = skipSpace(text, v.end);
    if (text[i] === '}') return { json: `{${parts.join(',')}}`, end: i + 1 };
    if (text[i] !== ',') return null;
    i = skipSpace(text, i + 1);
  }
}

function readList(text: string, i: number): Read | null {
  const items: string[] = [];
  i = skipSpace(text, i + 1);
  if (text[i] === ']') return { json: '[]', end: i + 1 };
  for (;;) {
    const v = readValue(text, i);
    if (!v) return null;
    items.push(v.json);
    i = skipSpace(text, v.end);
    if (text[i] === ']') return { json: `[${items.join(',')}]`, end: i + 1 };
    if (text[i] !== ',') return null;
    i = skipSpace(text, i + 1);
  }
}

/** The calls from the first <|tool_call> on; the text before is content. Null when they do not parse. */
export function parseGemma4Calls(text: string): ToolParse | null {
  const at = text.indexOf('<|tool_call>');
  if (at < 0) return null;
  const calls: ParsedToolCall[] = [];
  let i = at;
  while (i < text.length) {
    if (!text.startsWith(OPEN, i)) {
      if (calls.length === 0) return null;
      // the template writes a turn's text after its calls: that text is content too
      return { content: text.slice(0, at) + text.slice(i).replace(/<\|tool_response>\s*$/, ''), calls };
    }
    const brace = text.indexOf('{', i + OPEN.length);
    const name = brace < 0 ? '' : text.slice(i + OPEN.length, brace).trim();
    if (name === '' || /[\s<]/.test(name)) return null;
    const args = readDict(text, brace);
    if (!args) return null;
    calls.push({ name, arguments: args.json });
    i = args.end;
    // the closing tag (a reply cut at max_tokens may lack it), then perhaps the next call
    if (text.startsWith(CLOSE, i)) i += CLOSE.length;
    i = skipSpace(text, i);
  }
  return { content: text.slice(0, at), calls };
}
