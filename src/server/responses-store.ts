// Responses kept for GET /v1/responses/{id} and previous_response_id: in memory, in this
// process only (gone on restart, as vLLM's store), bounded by a count and by the bytes of
// their conversations; the least recently used goes first when either bound is passed.
// A stored response carries its whole conversation (the items it was given, the previous
// response's included, then its output), so a later turn never needs an evicted ancestor.
import type { Conversation } from './responses-request.js';

export interface StoredResponse {
  /** the Response object as returned */
  readonly response: Record<string, unknown>;
  /** the conversation up to and with this response's output (not its instructions: OpenAI does not carry them over) */
  readonly conversation: Conversation;
  /** approximate bytes held (the conversation's and the response's JSON) */
  readonly bytes: number;
}

export const DEFAULT_STORE_LIMITS = { maxResponses: 1000, maxBytes: 256 * 2 ** 20 } as const;

export class ResponseStore {
  private readonly entries = new Map<string, StoredResponse>();
  private bytes = 0;

  constructor(readonly limits: { readonly maxResponses: number; readonly maxBytes: number } = DEFAULT_STORE_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  /** the response, now the most recently used */
  get(id: string): StoredResponse | undefined {
    const e = this.entries.get(id);
    if (e) {
      this.entries.delete(id);
      this.entries.set(id, e);
    }
    return e;
  }

  put(id: string, response: Record<string, unknown>, conversation: Conversation): void {
    this.delete(id);
    const bytes = JSON.stringify(conversation).length + JSON.stringify(response).length;
    this.entries.set(id, { response, conversation, bytes });
    this.bytes += bytes;
    for (const [old, e] of this.entries) {
      if (this.entries.size <= this.limits.maxResponses && this.bytes <= this.limits.maxBytes) break;
      if (old === id) continue; // the newest stays, even alone over the byte bound
      this.entries.delete(old);
      this.bytes -= e.bytes;
    }
  }

  delete(id: string): boolean {
    const e = this.entries.get(id);
    if (!e) return false;
    this.entries.delete(id);
    this.bytes -= e.bytes;
    return true;
  }
}
