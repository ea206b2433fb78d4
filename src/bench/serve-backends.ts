// What `bench serve` sends to each API and what it reads back. loom = LMDeploy-style
// /generate (input_ids, meta_info), openai = /v1/completions, openai-chat =
// /v1/chat/completions (one user message). Every request is greedy (temperature 0);
// ignore_eos (a vLLM/loom extra) unless --disable-ignore-eos; usage asked for in the stream.
import type { ServeRequest } from './serve-dataset.js';

export const SERVE_BACKENDS = ['loom', 'openai', 'openai-chat'] as const;
export type ServeBackend = (typeof SERVE_BACKENDS)[number];

export const DEFAULT_ENDPOINT: Record<ServeBackend, string> = {
  loom: '/generate',
  openai: '/v1/completions',
  'openai-chat': '/v1/chat/completions',
};

export interface BodyOptions {
  readonly model: string;
  readonly stream: boolean;
  readonly ignoreEos: boolean;
}

export function requestBody(backend: ServeBackend, r: ServeRequest, o: BodyOptions): Record<string, unknown> {
  const common = { temperature: 0, stream: o.stream, ...(o.ignoreEos && { ignore_eos: true }) };
  const usage = o.stream ? { stream_options: { include_usage: true } } : {};
  switch (backend) {
    case 'loom':
      return { input_ids: r.promptIds, max_tokens: r.outputLen, ...common };
    case 'openai':
      return { model: o.model, prompt: r.prompt, max_tokens: r.outputLen, ...common, ...usage };
    case 'openai-chat':
      return { model: o.model, messages: [{ role: 'user', content: r.prompt }], max_completion_tokens: r.outputLen, ...common, ...usage };
  }
}

/** What one SSE event (or a whole non-streamed answer) carries. */
export interface Piece {
  readonly text: string;
  /** output tokens in this piece, where the API says (loom's output_ids) */
  readonly tokens?: number;
  readonly promptTokens?: number;
  /** cumulative completion tokens so far (usage / meta_info) */
  readonly completionTokens?: number;
  readonly error?: string;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function errorText(j: Json): string | undefined {
  const e = j.error ?? (j.object === 'error' ? j : undefined);
  if (e === undefined || e === null) return undefined;
  if (typeof e === 'string') return e;
  const m = obj(e)?.message;
  return typeof m === 'string' ? m : JSON.stringify(e);
}

/** One parsed JSON event or answer of `backend`. */
export function readPiece(backend: ServeBackend, value: unknown): Piece {
  const j = obj(value) ?? {};
  const error = errorText(j);
  if (error !== undefined) return { text: '', error };
  if (backend === 'loom') {
    const meta = obj(j.meta_info) ?? {};
    const ids = Array.isArray(j.output_ids) ? j.output_ids.length : undefined;
    return { text: str(j.text), tokens: ids, promptTokens: num(meta.prompt_tokens), completionTokens: num(meta.completion_tokens) };
  }
  const usage = obj(j.usage);
  const choice = obj(Array.isArray(j.choices) ? j.choices[0] : undefined) ?? {};
  const text = backend === 'openai' ? str(choice.text) : str(obj(choice.delta)?.content ?? obj(choice.message)?.content);
  return { text, promptTokens: num(usage?.prompt_tokens), completionTokens: num(usage?.completion_tokens) };
}
