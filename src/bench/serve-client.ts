// One benchmark request over HTTP (a connection of its own). Streaming: every SSE event is timestamped when its bytes
// arrive; an event that carries output (text, or loom's output_ids) is a token arrival: the
// first sets TTFT, each later one adds an ITL gap (one per chunk, as vLLM counts). E2E runs
// from sending to the last event. Without streaming, TTFT = E2E and there are no ITL gaps.
import type { IncomingMessage } from 'node:http';
import { readPiece } from './serve-backends.js';
import type { Piece, ServeBackend } from './serve-backends.js';
import { bodyText, postJson } from './sse-post.js';

export interface RequestOutput {
  readonly success: boolean;
  readonly error?: string;
  /** performance.now() when sent */
  readonly startMs: number;
  readonly ttftMs: number;
  /** gaps between consecutive output-carrying events */
  readonly itlMs: readonly number[];
  readonly latencyMs: number;
  readonly generatedText: string;
  /** from the server's usage / meta_info, when given */
  readonly promptTokens?: number;
  readonly outputTokens?: number;
  /** output tokens counted from output_ids, when the API sends them */
  readonly countedTokens?: number;
}

export interface SendOptions {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly backend: ServeBackend;
  readonly body: Record<string, unknown>;
  readonly stream: boolean;
}

const failed = (startMs: number, error: string): RequestOutput => ({
  success: false, error, startMs, ttftMs: NaN, itlMs: [], latencyMs: performance.now() - startMs, generatedText: '',
});

export async function sendRequest(o: SendOptions): Promise<RequestOutput> {
  const startMs = performance.now();
  let res: IncomingMessage;
  try {
    // node:http (postJson): fetch gives up on a response whose headers take over 300 s, which a
    // request queued behind long prefills on a slow CPU does
    res = await postJson(o.url, o.body, o.headers);
  } catch (e) {
    return failed(startMs, (e as Error).message);
  }
  if (res.statusCode !== 200) {
    const text = await bodyText(res).catch(() => '');
    let detail = text.slice(0, 200);
    try {
      detail = readPiece(o.backend, JSON.parse(text)).error ?? detail;
    } catch {
      // not JSON: keep the text
    }
    return failed(startMs, `HTTP ${res.statusCode}${detail ? `: ${detail}` : ''}`);
  }
  try {
    if (!o.stream) {
      const p = readPiece(o.backend, JSON.parse(await bodyText(res)));
      if (p.error !== undefined) return failed(startMs, p.error);
      const latencyMs = performance.now() - startMs;
      return { success: true, startMs, ttftMs: latencyMs, itlMs: [], latencyMs, generatedText: p.text, ...tokens(p, p.tokens) };
    }
    return await readStream(o.backend, res, startMs);
  } catch (e) {
    return failed(startMs, (e as Error).message);
  }
}

const tokens = (p: Piece | undefined, counted: number | undefined) => ({
  ...(p?.promptTokens !== undefined && { promptTokens: p.promptTokens }),
  ...(p?.completionTokens !== undefined && { outputTokens: p.completionTokens }),
  ...(counted !== undefined && { countedTokens: counted }),
});

async function readStream(backend: ServeBackend, res: IncomingMessage, startMs: number): Promise<RequestOutput> {
  const decoder = new TextDecoder();
  let buffered = '';
  let ttftMs = NaN;
  let lastOutput = NaN;
  let lastEvent = startMs;
  const itlMs: number[] = [];
  let text = '';
  let counted: number | undefined;
  let promptTokens: number | undefined;
  let completionTokens: number | undefined;
  let done = false;
  for await (const bytes of res as AsyncIterable<Buffer>) {
    const at = performance.now();
    buffered += decoder.decode(bytes, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      lastEvent = at;
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const p = readPiece(backend, JSON.parse(data));
      if (p.error !== undefined) return failed(startMs, p.error);
      promptTokens = p.promptTokens ?? promptTokens;
      completionTokens = p.completionTokens ?? completionTokens;
      if (p.tokens !== undefined) counted = (counted ?? 0) + p.tokens;
      if (p.text.length === 0 && !(p.tokens! > 0)) continue;
      text += p.text;
      if (Number.isNaN(ttftMs)) ttftMs = at - startMs;
      else itlMs.push(at - lastOutput);
      lastOutput = at;
    }
  }
  if (!done && backend !== 'loom') return failed(startMs, 'the stream ended without data: [DONE]');
  if (Number.isNaN(ttftMs)) return failed(startMs, 'the stream carried no output');
  return { success: true, startMs, ttftMs, itlMs, latencyMs: lastEvent - startMs, generatedText: text, ...tokens({ text: '', promptTokens, completionTokens }, counted) };
}
