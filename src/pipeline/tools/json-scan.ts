// Python's json.JSONDecoder.raw_decode for the tool parsers: the JSON value at the start
// of a text and where it ends, so "{…}; {…}" and "[…] trailing" can be taken apart.

/** The end index (exclusive) of the object/array starting at `from`, or -1 if it never closes. */
function balancedEnd(text: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The JSON object or array at `from` (after whitespace) and the index after it, or null. */
export function rawDecode(text: string, from = 0): { value: unknown; end: number } | null {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (text[i] !== '{' && text[i] !== '[') return null;
  const end = balancedEnd(text, i);
  if (end < 0) return null;
  try {
    return { value: JSON.parse(text.slice(i, end)), end };
  } catch {
    return null;
  }
}
