// OpenAI response pieces shared by the routes: usage and the two logprobs shapes.
import type { Tokenizer } from '../../tokenizer/tokenizer.js';
import type { GenerationSummary, TokenLogprob } from '../generation.js';

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

/** JSON has no −∞ (a token the processed distribution excluded): report it as vLLM does */
export const jsonLogprob = (lp: number): number => (Number.isFinite(lp) ? lp : -9999);

/** the text a single token stands for (special tokens spelled out) */
export function tokenString(tokenizer: Tokenizer, id: number): string {
  return tokenizer.decode([id], { skipSpecial: false });
}

/** /v1/completions logprobs: parallel arrays, text_offset from the choice's text start */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];
}

export function completionLogprobs(tokenizer: Tokenizer, lps: readonly TokenLogprob[], offset: number): CompletionLogprobs {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = offset;
  for (const lp of lps) {
    const text = tokenString(tokenizer, lp.id);
    out.tokens.push(text);
    out.token_logprobs.push(jsonLogprob(lp.logprob));
    out.top_logprobs.push(Object.fromEntries(lp.top.map((t) => [tokenString(tokenizer, t.id), jsonLogprob(t.logprob)])));
    out.text_offset.push(at);
    at += text.length;
  }
  return out;
}

/** /v1/chat/completions logprobs.content entries */
export interface ChatLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export function chatLogprobs(tokenizer: Tokenizer, lps: readonly TokenLogprob[]): ChatLogprob[] {
  const entry = (id: number, logprob: number) => {
    const token = tokenString(tokenizer, id);
    return { token, logprob: jsonLogprob(logprob), bytes: [...Buffer.from(token, 'utf8')] };
  };
  return lps.map((lp) => ({ ...entry(lp.id, lp.logprob), top_logprobs: lp.top.map((t) => entry(t.id, t.logprob)) }));
}

/** OpenAI's echo + logprobs: the prompt's tokens first, the first with a null logprob */
export function promptCompletionLogprobs(tokenizer: Tokenizer, promptIds: readonly number[], summary: GenerationSummary): CompletionLogprobs {
  const lps = summary.promptLogprobs;
  const topN = lps && promptIds.length > 1 ? lps.topIds.length / (promptIds.length - 1) : 0;
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = 0;
  promptIds.forEach((id, i) => {
    const text = tokenString(tokenizer, id);
    out.tokens.push(text);
    out.text_offset.push(at);
    at += text.length;
    if (i === 0 || !lps) {
      out.token_logprobs.push(null as unknown as number);
      out.top_logprobs.push(null as unknown as Record<string, number>);
      return;
    }
    out.token_logprobs.push(jsonLogprob(lps.logprobs[i - 1]!));
    const top: Record<string, number> = {};
    for (let j = 0; j < topN; j++) top[tokenString(tokenizer, lps.topIds[(i - 1) * topN + j]!)] = jsonLogprob(lps.topLogprobs[(i - 1) * topN + j]!);
    out.top_logprobs.push(top);
  });
  return out;
}

/** vLLM's prompt_logprobs: null for the first token, then {token_id: {logprob, rank, decoded_token}} */
export function vllmPromptLogprobs(tokenizer: Tokenizer, promptIds: readonly number[], summary: GenerationSummary): (Record<string, { logprob: number; decoded_token: string }> | null)[] {
  const lps = summary.promptLogprobs;
  if (!lps) return [];
  const topN = promptIds.length > 1 ? lps.topIds.length / (promptIds.length - 1) : 0;
  return promptIds.map((id, i) => {
    if (i === 0) return null;
    const entry = (tid: number, lp: number) => [String(tid), { logprob: jsonLogprob(lp), decoded_token: tokenString(tokenizer, tid) }] as const;
    const pairs = [entry(id, lps.logprobs[i - 1]!)];
    for (let j = 0; j < topN; j++) pairs.push(entry(lps.topIds[(i - 1) * topN + j]!, lps.topLogprobs[(i - 1) * topN + j]!));
    return Object.fromEntries(pairs);
  });
}
