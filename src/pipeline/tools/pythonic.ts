// Python call syntax as tool calls, the way vLLM's `pythonic` parser reads it (with
// Python's ast): `[get_weather(city="Paris", days=3), get_time()]` — keyword arguments
// whose values are Python literals (strings, numbers, True/False/None, lists, tuples,
// dicts). Used by the pythonic parser (Llama 3.2, ToolACE, Gemma 3 with vLLM's template)
// and by Llama 3.1's built-in tool form `<|python_tag|>brave_search.call(query="…")`.
import type { ParsedToolCall } from './parsers.js';

class Syntax extends Error {}

class Reader {
  at = 0;
  constructor(private readonly s: string) {}

  ws(): void {
    while (this.at < this.s.length && /\s/.test(this.s[this.at]!)) this.at++;
  }

  peek(): string {
    this.ws();
    return this.s[this.at] ?? '';
  }

  eat(c: string): boolean {
    if (this.peek() !== c) return false;
    this.at++;
    return true;
  }

  expect(c: string): void {
    if (!this.eat(c)) throw new Syntax(`expected ${c} at ${this.at}`);
  }

  get done(): boolean {
    this.ws();
    return this.at >= this.s.length;
  }

  ident(): string {
    this.ws();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.at));
    if (!m) throw new Syntax(`expected a name at ${this.at}`);
    this.at += m[0].length;
    return m[0];
  }

  /** a comma-separated sequence up to `close`, a trailing comma allowed */
  list<T>(close: string, item: () => T): T[] {
    const out: T[] = [];
    while (!this.eat(close)) {
      out.push(item());
      if (!this.eat(',')) {
        this.expect(close);
        break;
      }
    }
    return out;
  }

  value(): unknown {
    const c = this.peek();
    if (c === '"' || c === "'") return this.string(c);
    if (c === '[') return this.at++, this.list(']', () => this.value());
    if (c === '(') return this.at++, this.list(')', () => this.value());
    if (c === '{') {
      this.at++;
      const entries = this.list('}', () => {
        const key = this.value();
        this.expect(':');
        return [typeof key === 'string' ? key : JSON.stringify(key), this.value()] as const;
      });
      return Object.fromEntries(entries);
    }
    // JSON's true/false/null too: templates render the history's arguments with tojson, and models copy them
    const m = /^(?:-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|True|False|None|true|false|null)(?![A-Za-z0-9_])/.exec(this.s.slice(this.at));
    if (!m) throw new Syntax(`expected a literal at ${this.at}`);
    this.at += m[0].length;
    const word: Record<string, boolean | null> = { True: true, False: false, None: null, true: true, false: false, null: null };
    return m[0] in word ? word[m[0]] : Number(m[0]);
  }

  private string(quote: string): string {
    let out = '';
    for (this.at++; this.at < this.s.length; this.at++) {
      const c = this.s[this.at]!;
      if (c === quote) {
        this.at++;
        return out;
      }
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.s[++this.at] ?? '';
      const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0', b: '\b', f: '\f' };
      if (e in simple) out += simple[e];
      else if (e === 'x' || e === 'u') {
        const len = e === 'x' ? 2 : 4;
        const hex = this.s.slice(this.at + 1, this.at + 1 + len);
        if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== len) throw new Syntax(`bad \\${e} escape`);
        out += String.fromCharCode(parseInt(hex, 16));
        this.at += len;
      } else out += '\\' + e; // Python keeps unknown escapes
    }
    throw new Syntax('unterminated string');
  }

  /** name(k=v, …); a dotted name keeps its first part when the last is `call` (Llama's built-in tools) */
  call(): ParsedToolCall {
    const parts = [this.ident()];
    while (this.eat('.')) parts.push(this.ident());
    const name = parts.length === 2 && parts[1] === 'call' ? parts[0]! : parts.join('.');
    this.expect('(');
    const args = this.list(')', () => {
      const key = this.ident();
      this.expect('=');
      return [key, this.value()] as const;
    });
    return { name, arguments: JSON.stringify(Object.fromEntries(args)) };
  }
}

/** `[call, …]` as the whole text, or null when it is not that */
export function parsePythonicList(text: string): ParsedToolCall[] | null {
  const r = new Reader(text);
  try {
    r.expect('[');
    const calls = r.list(']', () => r.call());
    return calls.length > 0 && r.done ? calls : null;
  } catch (err) {
    if (err instanceof Syntax) return null;
    throw err;
  }
}

/** one `name(…)` / `name.call(…)` as the whole text, or null */
export function parsePythonicCall(text: string): ParsedToolCall | null {
  const r = new Reader(text);
  try {
    const call = r.call();
    return r.done ? call : null;
  } catch (err) {
    if (err instanceof Syntax) return null;
    throw err;
  }
}
