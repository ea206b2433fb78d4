// Reads a tool_choice "required" output as it grows: the grammar shapes it as
// [{"name": "<tool>", "parameters": <value>}, …], so a scan of brackets and strings finds each
// call's name and where its parameters start and end, and the arguments can stream while
// they are generated (as vLLM streams them), not only when the choice ends.

export interface ScannedCall {
  name?: string;
  /** where the parameters value starts, and ends (exclusive) once it has */
  argsStart?: number;
  argsEnd?: number;
}

export class RequiredCallScanner {
  text = '';
  readonly calls: ScannedCall[] = [];
  private pos = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private stringStart = 0;
  /** at depth 2 (in a call object): a key is next, or the value of `valueKey` */
  private expectingKey = false;
  private lastKey: string | null = null;
  private valueKey: string | null = null;

  push(piece: string): void {
    this.text += piece;
    const t = this.text;
    for (; this.pos < t.length; this.pos++) {
      const c = t[this.pos]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') {
          this.inString = false;
          if (this.depth === 2) this.stringEnded(t.slice(this.stringStart, this.pos + 1));
        }
        continue;
      }
      if (/\s/.test(c)) continue;
      const call = this.calls[this.calls.length - 1];
      // the first character of a value at depth 2
      if (this.depth === 2 && this.valueKey === 'parameters' && call && call.argsStart === undefined) call.argsStart = this.pos;
      if (c === '"') {
        this.inString = true;
        this.stringStart = this.pos;
      } else if (c === '{' || c === '[') {
        this.depth++;
        if (this.depth === 2) {
          this.calls.push({});
          this.expectingKey = true;
        }
      } else if (c === '}' || c === ']') {
        if (this.depth === 2) this.valueEnded();
        this.depth--;
        // an object/array parameters value just closed
        if (this.depth === 2 && this.valueKey === 'parameters' && call && call.argsEnd === undefined) call.argsEnd = this.pos + 1;
      } else if (c === ':' && this.depth === 2) {
        this.valueKey = this.lastKey;
        this.expectingKey = false;
      } else if (c === ',' && this.depth === 2) {
        this.valueEnded();
        this.expectingKey = true;
      }
    }
  }

  /** how far the current call's arguments may be sent: all of an open object/array value scanned so far */
  sendable(call: ScannedCall): number | undefined {
    if (call.argsStart === undefined) return undefined;
    if (call.argsEnd !== undefined) return call.argsEnd;
    const open = this.text[call.argsStart];
    return open === '{' || open === '[' ? this.pos : call.argsStart;
  }

  private stringEnded(raw: string): void {
    if (this.expectingKey) {
      this.lastKey = JSON.parse(raw) as string;
      return;
    }
    const call = this.calls[this.calls.length - 1];
    if (this.valueKey === 'name' && call) call.name = JSON.parse(raw) as string;
  }

  /** a value at depth 2 ended at this.pos (a `,` or the call's `}`) */
  private valueEnded(): void {
    const call = this.calls[this.calls.length - 1];
    if (this.valueKey === 'parameters' && call && call.argsStart !== undefined && call.argsEnd === undefined) {
      call.argsEnd = this.text.slice(0, this.pos).trimEnd().length;
    }
    this.valueKey = null;
  }
}
