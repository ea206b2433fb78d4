// OpenAI response pieces shared by the routes: usage and the logprobs shapes, as vLLM
// writes them (entrypoints/openai/completion/serving.py _create_completion_logprobs,
// chat_completion/serving.py _create_chat_logprobs, vllm/logprobs.py).
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import type { GenerationSummary, TokenLogprob } from '../../pipeline/generate.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export function usageOf(summaries: readonly GenerationSummary[]): Usage {
  const prompt = summaries.reduce((n, s) => n + s.promptTokens, 0);
  const completion = summaries.reduce((n, s) => n + s.completionTokens, 0);
  const cached = summaries.reduce((n, s) => n + s.cachedTokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cached } };
}

/** usage mid-stream (vLLM's continuous_usage_stats): one choice's prompt, and the tokens that choice has sent so far */
export function usageSoFar(summary: GenerationSummary, completionTokens: number): Usage {
  const prompt = summary.promptTokens;
  return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens, prompt_tokens_details: { cached_tokens: summary.cachedTokens } };
}

/** JSON has no −∞ (a token the processed distribution excluded): report it as vLLM does */
export const jsonLogprob = (lp: number): number => (Number.isFinite(lp) ? lp : -9999);

const utf8 = new TextDecoder('utf-8');

/**
 * The text a token stands for inside a completion: its bytes as they join the text (a
 * SentencePiece "▁the" keeps its space, unlike decode([id]) which strips it at the start
 * of a text), so the tokens of a completion concatenate to its text. Special tokens are
 * spelled out.
 */
export function tokenString(tokenizer: Tokenizer, id: number): string {
  return utf8.decode(tokenizer.tokenBytes(id));
}

/** /v1/completions logprobs: parallel arrays, text_offset from the choice's text start */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

/** vLLM's top_logprobs entry: the sampled token, then the top N (one key per distinct text) */
function topEntry(tokenizer: Tokenizer, lp: TokenLogprob, topN: number): Record<string, number> {
  const out: Record<string, number> = {};
  const candidates = [{ id: lp.id, logprob: lp.logprob }, ...lp.top];
  const seen = new Set<number>();
  for (const c of candidates) {
    if (c.id < 0 || seen.has(c.id) || seen.size > topN) continue;
    seen.add(c.id);
    const key = tokenString(tokenizer, c.id);
    if (!(key in out)) out[key] = jsonLogprob(c.logprob);
  }
  return out;
}

export function completionLogprobs(tokenizer: Tokenizer, lps: readonly TokenLogprob[], offset: number, topN: number): CompletionLogprobs {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = offset;
  for (const lp of lps) {
    const text = tokenString(tokenizer, lp.id);
    out.tokens.push(text);
    out.token_logprobs.push(jsonLogprob(lp.logprob));
    out.top_logprobs.push(topEntry(tokenizer, lp, topN));
    out.text_offset.push(at);
    at += text.length;
  }
  return out;
}

export function appendLogprobs(a: CompletionLogprobs, b: CompletionLogprobs): CompletionLogprobs {
  return {
    tokens: [...a.tokens, ...b.tokens],
    token_logprobs: [...a.token_logprobs, ...b.token_logprobs],
    top_logprobs: [...a.top_logprobs, ...b.top_logprobs],
    text_offset: [...a.text_offset, ...b.text_offset],
  };
}

/** /v1/chat/completions logprobs.content entries */
export interface ChatLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export function chatLogprobs(tokenizer: Tokenizer, lps: readonly TokenLogprob[]): ChatLogprob[] {
  // bytes: the token's own UTF-8 bytes (a byte-fallback token's single byte, not U+FFFD's)
  const entry = (id: number, logprob: number) => ({ token: tokenString(tokenizer, id), logprob: jsonLogprob(logprob), bytes: [...tokenizer.tokenBytes(id)] });
  // vLLM's position dict holds the sampled token first, then the top N; top_logprobs are its first N entries
  return lps.map((lp) => {
    const seen = new Set<number>();
    const top = [{ id: lp.id, logprob: lp.logprob }, ...lp.top].filter((t) => t.id >= 0 && !seen.has(t.id) && seen.add(t.id)).slice(0, lp.top.length);
    return { ...entry(lp.id, lp.logprob), top_logprobs: top.map((t) => entry(t.id, t.logprob)) };
  });
}

/** OpenAI's echo + logprobs: the prompt's tokens first, the first with a null logprob */
export function promptCompletionLogprobs(tokenizer: Tokenizer, promptIds: readonly number[], summary: GenerationSummary, topN: number): CompletionLogprobs {
  const lps = summary.promptLogprobs;
  const width = lps && promptIds.length > 1 ? lps.topIds.length / (promptIds.length - 1) : 0;
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = 0;
  promptIds.forEach((id, i) => {
    const text = tokenString(tokenizer, id);
    out.tokens.push(text);
    out.text_offset.push(at);
    at += text.length;
    if (i === 0 || !lps) {
      out.token_logprobs.push(null);
      out.top_logprobs.push(null);
      return;
    }
    const top = Array.from({ length: width }, (_, j) => ({ id: lps.topIds[(i - 1) * width + j]!, logprob: lps.topLogprobs[(i - 1) * width + j]! }));
    out.token_logprobs.push(jsonLogprob(lps.logprobs[i - 1]!));
    out.top_logprobs.push(topEntry(tokenizer, { id, logprob: lps.logprobs[i - 1]!, top }, topN));
  });
  return out;
}

export interface VllmPromptLogprob {
  logprob: number;
  rank: number;
  decoded_token: string;
}

/** vLLM's prompt_logprobs: null for the first token, then {token_id: {logprob, rank, decoded_token}} */
export function vllmPromptLogprobs(tokenizer: Tokenizer, promptIds: readonly number[], summary: GenerationSummary): (Record<string, VllmPromptLogprob> | null)[] {
  const lps = summary.promptLogprobs;
  if (!lps) return [];
  const width = promptIds.length > 1 ? lps.topIds.length / (promptIds.length - 1) : 0;
  return promptIds.map((id, i) => {
    if (i === 0) return null;
    const entry = (tid: number, lp: number, rank: number) => [String(tid), { logprob: jsonLogprob(lp), rank, decoded_token: tokenString(tokenizer, tid) }] as const;
    const pairs = [entry(id, lps.logprobs[i - 1]!, lps.ranks[i - 1]!)];
    for (let j = 0; j < width; j++) {
      const tid = lps.topIds[(i - 1) * width + j]!;
      if (tid >= 0 && tid !== id) pairs.push(entry(tid, lps.topLogprobs[(i - 1) * width + j]!, j + 1));
    }
    return Object.fromEntries(pairs);
  });
}
