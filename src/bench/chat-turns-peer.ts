// `loom bench chat-turns-peer`: the conversation of `bench chat-turns` (a system prompt, then
// turns of a user message and a reply, seeded random token ids) replayed over HTTP against
// `loom serve` and llama.cpp's llama-server, both started here on the same GGUF with the same
// threads. Each turn's prompt is the whole history plus the new user message, as token ids, the
// same ids on both sides; the sides alternate which goes first each turn, so a loaded machine
// slows both alike. Measured per turn and side: the time from sending the request to the first
// streamed token, and the prompt tokens the server says its cache served.
// The replies in the history are drawn by the bench, not the model's own (each server still
// generates --reply-len tokens a turn): the prompts stay identical on both sides, and as in a
// real chat with Qwen3.5 (whose template drops the thinking from the history, and whose client
// resends text to be tokenized again) a turn cannot reuse the state after the generated reply:
// its hit comes from a checkpoint at or before the end of the previous prompt. With ownReplies
// each side's history carries its own greedy reply instead, as resent by a client that keeps
// the generated ids (llama-server then continues from its slot's state, with no checkpoint).
// The replies may not use tokens that are pieces of a character (a logit bias on both sides):
// llama-server sends no chunk for such a token until a later one completes the character.
import { availableParallelism, loadavg } from 'node:os';
import { Rng } from '../engine/rng.js';
import { InvalidArgumentError, LoomError } from '../errors.js';
import { loadModel } from '../model/load.js';
import { conversationLength } from './chat-turns.js';
import type { ChatShape } from './chat-turns.js';
import { partialCharacterIds, vocabularyIds } from './datasets.js';
import { ensureLlamaServer, startLlamaServer } from './llama-server.js';
import type { ServersRun } from './llama-server.js';
import { startLoomServer } from './loom-server.js';
import type { RunningServer } from './loom-server.js';
import { postSse } from './sse-post.js';
import { turnsTable } from './turns-table.js';
import type { SideTurn, TurnSides } from './turns-table.js';

export interface ChatTurnsPeerOptions extends ChatShape {
  /** a llama-server binary (default: built once from the source node-llama-cpp ships) */
  readonly llamaServer?: string;
  readonly loomArgs: readonly string[];
  readonly llamaArgs: readonly string[];
  /** each side's history carries its own greedy replies instead of the drawn ones */
  readonly ownReplies?: boolean;
}

export interface Conversation {
  readonly system: readonly number[];
  readonly users: readonly (readonly number[])[];
  readonly replies: readonly (readonly number[])[];
}

/** One side's turn: the shared figures, the reply it generated, and llama-server's own prompt time. */
export interface PeerSideTurn extends SideTurn {
  /** the generated ids as streamed (every one: the server's own count is checked) */
  readonly reply: readonly number[];
  /** llama-server's timings.prompt_ms (loom reports none) */
  readonly serverPromptMs?: number;
}

export interface ChatPeerTurn extends TurnSides {
  readonly loom: PeerSideTurn;
  readonly llamacpp: PeerSideTurn;
}

export interface ChatTurnsPeerReport extends ServersRun {
  readonly settings: ChatTurnsPeerOptions & { readonly threads: number; readonly context: number };
  /** ids the replies may not use (pieces of a character) */
  readonly bannedTokens: number;
  readonly turns: ChatPeerTurn[];
}

export type Side = 'loom' | 'llamacpp';

/** The conversation's token ids, drawn from ids (non-special tokens) by a seeded generator. */
export function drawConversation(ids: ArrayLike<number>, o: Pick<ChatShape, 'turns' | 'systemLen' | 'userLen' | 'replyLen' | 'seed'>): Conversation {
  const rng = new Rng(o.seed);
  const draw = (n: number): number[] => Array.from({ length: n }, () => ids[Math.floor(rng.next() * ids.length)]!);
  const system = draw(o.systemLen);
  const users: number[][] = [];
  const replies: number[][] = [];
  for (let t = 0; t < o.turns; t++) {
    users.push(draw(o.userLen));
    replies.push(draw(o.replyLen));
  }
  return { system, users, replies };
}

/** Turn t's prompt (from 0): the system prompt, every earlier user message and reply, then user message t. */
export function turnPrompt(c: Conversation, t: number): number[] {
  return [...c.system, ...c.users.slice(0, t).flatMap((u, i) => [...u, ...c.replies[i]!]), ...c.users[t]!];
}

export const LOOM_ENDPOINT = '/v1/completions';
export const LLAMA_ENDPOINT = '/completion';

/** What a turn asks for besides its prompt: the reply's length, and the ids the reply may not use. */
export interface ReplySpec {
  readonly replyLen: number;
  /** ids biased by BAN_BIAS on both sides (partialCharacterIds: tokens a stream would hold back) */
  readonly banned: readonly number[];
}

/** OpenAI's lowest logit bias, on both sides */
const BAN_BIAS = -100;

/** loom: OpenAI's completions with token ids, greedy, its usage (cached_tokens) in a last chunk. */
export function loomRequest(prompt: readonly number[], r: ReplySpec): object {
  return {
    prompt, max_tokens: r.replyLen, temperature: 0, ignore_eos: true, logit_bias: Object.fromEntries(r.banned.map((id) => [id, BAN_BIAS])),
    stream: true, stream_options: { include_usage: true }, return_token_ids: true,
  };
}

/** llama-server: its own /completion with token ids, greedy, the prompt cache on, ids in each chunk. */
export function llamaRequest(prompt: readonly number[], r: ReplySpec): object {
  return {
    prompt, n_predict: r.replyLen, temperature: 0, top_k: 1, ignore_eos: true, logit_bias: r.banned.map((id) => [id, BAN_BIAS]),
    cache_prompt: true, stream: true, return_tokens: true,
  };
}

interface LoomChunk {
  choices?: { token_ids?: number[] }[];
  usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
}

interface LlamaChunk {
  tokens?: number[];
  stop?: boolean;
  tokens_evaluated?: number;
  tokens_predicted?: number;
  timings?: { cache_n?: number; prompt_n?: number; prompt_ms?: number };
}

/** One streamed turn on loom: the first chunk with a token id is the first token. */
export async function loomTurn(url: string, prompt: readonly number[], r: ReplySpec): Promise<PeerSideTurn> {
  const start = performance.now();
  let ttftMs = -1;
  let usage: LoomChunk['usage'];
  const reply: number[] = [];
  for await (const data of postSse(`${url}${LOOM_ENDPOINT}`, loomRequest(prompt, r))) {
    const chunk = data as LoomChunk;
    const ids = chunk.choices?.flatMap((c) => c.token_ids ?? []) ?? [];
    if (ttftMs < 0 && ids.length > 0) ttftMs = performance.now() - start;
    reply.push(...ids);
    if (chunk.usage) usage = chunk.usage;
  }
  if (!usage || ttftMs < 0) throw new LoomError(`${url}${LOOM_ENDPOINT}: the stream ended without ${usage ? 'a token' : 'its usage'}`);
  checkReply(`${url}${LOOM_ENDPOINT}`, reply, usage.completion_tokens);
  return { promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0, ttftMs, reply };
}

/** Every generated id came in the stream (none held back: the first token's time is that of the first one). */
function checkReply(where: string, reply: readonly number[], generated: number | undefined): void {
  if (reply.length !== generated) throw new LoomError(`${where}: the stream carried ${reply.length} token ids of the ${String(generated)} the server generated`);
}

/**
 * One streamed turn on llama-server: the first chunk with a token is the first token (its first
 * chunk, with none, only opens the stream; a token that ends mid-character would be held back
 * until the next completes it, hence the ban); the last chunk (stop) has its prompt split and
 * own prompt time.
 */
export async function llamaTurn(url: string, prompt: readonly number[], r: ReplySpec): Promise<PeerSideTurn> {
  const start = performance.now();
  let ttftMs = -1;
  let last: LlamaChunk | undefined;
  const reply: number[] = [];
  for await (const data of postSse(`${url}${LLAMA_ENDPOINT}`, llamaRequest(prompt, r))) {
    const chunk = data as LlamaChunk;
    if (ttftMs < 0 && (chunk.tokens?.length ?? 0) > 0) ttftMs = performance.now() - start;
    reply.push(...(chunk.tokens ?? []));
    if (chunk.stop) last = chunk;
  }
  if (!last?.timings || ttftMs < 0) throw new LoomError(`${url}${LLAMA_ENDPOINT}: the stream ended without ${last ? 'a token' : 'its last chunk (stop: true)'}`);
  checkReply(`${url}${LLAMA_ENDPOINT}`, reply, last.tokens_predicted);
  const cached = last.timings.cache_n ?? 0;
  return {
    promptTokens: last.tokens_evaluated ?? cached + (last.timings.prompt_n ?? 0),
    cachedTokens: cached,
    ttftMs,
    reply,
    ...(last.timings.prompt_ms !== undefined && { serverPromptMs: last.timings.prompt_ms }),
  };
}

const TURN: Record<Side, (url: string, prompt: readonly number[], r: ReplySpec) => Promise<PeerSideTurn>> = { loom: loomTurn, llamacpp: llamaTurn };

/**
 * The conversation against running servers, turn by turn, the sides alternating which goes first;
 * first one unmeasured request each (warm), of ids no turn starts with. The history carries the
 * drawn replies, or with ownReplies each side's own (its prompts then differ from the other's
 * in the replies' ids only).
 */
export async function replayConversation(
  c: Conversation,
  urls: Record<Side, string>,
  o: ReplySpec & { readonly warmup: readonly number[]; readonly ownReplies?: boolean },
  log: (line: string) => void = () => {},
): Promise<ChatPeerTurn[]> {
  const sides: Side[] = ['loom', 'llamacpp'];
  for (const side of sides) await TURN[side](urls[side], o.warmup, { ...o, replyLen: 1 });
  const history: Record<Side, number[]> = { loom: [...c.system], llamacpp: [...c.system] };
  const turns: ChatPeerTurn[] = [];
  for (let t = 0; t < c.users.length; t++) {
    const got: Partial<Record<Side, PeerSideTurn>> = {};
    for (const side of t % 2 === 0 ? sides : [...sides].reverse()) {
      const prompt = o.ownReplies ? [...history[side], ...c.users[t]!] : turnPrompt(c, t);
      const r = await TURN[side](urls[side], prompt, o);
      if (r.promptTokens !== prompt.length) throw new LoomError(`${side} counted ${r.promptTokens} prompt tokens in turn ${t + 1}, not the ${prompt.length} sent`);
      history[side] = [...prompt, ...r.reply];
      got[side] = r;
      log(`turn ${t + 1} ${side}: ${r.promptTokens} prompt tokens, ${r.cachedTokens} cached, TTFT ${r.ttftMs.toFixed(0)} ms` + (r.serverPromptMs !== undefined ? ` (its own prompt time ${r.serverPromptMs.toFixed(0)} ms)` : ''));
    }
    turns.push({ turn: t + 1, loom: got.loom!, llamacpp: got.llamacpp! });
  }
  return turns;
}

/** Starts both servers on the model, replays the conversation, stops them. */
export async function runChatTurnsPeer(o: ChatTurnsPeerOptions, log: (line: string) => void): Promise<ChatTurnsPeerReport> {
  const threads = o.threads ?? availableParallelism();
  // the vocabulary and context only: the model is let go before the servers map it
  const model = loadModel(o.model);
  const ids = vocabularyIds(model.tokenizer, model.config.vocabSize);
  const banned = partialCharacterIds(model.tokenizer, model.config.vocabSize);
  const modelContext = model.config.contextLength;
  model.dispose();
  // the last prompt, its reply, and room for the token a server keeps free
  const context = conversationLength(o) + 16;
  if (context > modelContext) throw new InvalidArgumentError(`the conversation (${context} tokens) exceeds the model's context of ${modelContext}`);
  const conversation = drawConversation(ids, o);
  const warmup = drawConversation(ids, { turns: 1, systemLen: 0, userLen: 16, replyLen: 0, seed: o.seed + 1 }).users[0]!;
  const binary = o.llamaServer ?? (await ensureLlamaServer(log)).binary;
  const loomArgs = ['--threads', String(threads), '--max-num-seqs', '1', '--max-model-len', String(context), ...o.loomArgs];
  const loadBefore = loadavg()[0]!;
  const servers: { loom?: RunningServer; llama?: RunningServer & { args: readonly string[] } } = {};
  try {
    servers.loom = await startLoomServer(o.model, loomArgs, log);
    servers.llama = await startLlamaServer(binary, o.model, { threads, parallel: 1, slotContext: context, extraArgs: o.llamaArgs }, log);
    const turns = await replayConversation(conversation, { loom: servers.loom.url, llamacpp: servers.llama.url }, { replyLen: o.replyLen, banned, warmup, ownReplies: o.ownReplies === true }, log);
    return { settings: { ...o, threads, context }, llamaServer: { binary, args: servers.llama.args }, loomArgs, bannedTokens: banned.length, loadBefore, loadAfter: loadavg()[0]!, turns };
  } finally {
    await servers.loom?.stop();
    await servers.llama?.stop();
  }
}

/** llama-server flags that differ run to run (the file, the port): left out of the report's line */
const PER_RUN = new Set(['-m', '--port']);

export function formatChatTurnsPeerReport(r: ChatTurnsPeerReport): string {
  const s = r.settings;
  const llamaPromptMs = r.turns.map((t) => t.llamacpp.serverPromptMs?.toFixed(0) ?? '-').join(', ');
  const agreed = r.turns.filter((t) => t.loom.reply.join() === t.llamacpp.reply.join()).length;
  return [
    `chat turns against llama-server: ${s.model}, ${r.turns.length} turns, system ${s.systemLen} tokens, ${s.userLen} per user message, ${s.replyLen} per reply ` +
      (s.ownReplies ? '(each side\'s own' : '(drawn, the same on both sides') + `; replies greedy without the ${r.bannedTokens} tokens that are pieces of a character), ${s.threads} threads, context ${s.context}; load average ${r.loadBefore.toFixed(1)} before, ${r.loadAfter.toFixed(1)} after`,
    `loom serve ${r.loomArgs.join(' ')}; llama-server ${r.llamaServer.args.filter((_, i, all) => !PER_RUN.has(all[i]!) && !PER_RUN.has(all[i - 1] ?? '')).join(' ')}`,
    '',
    ...turnsTable(r.turns),
    '',
    `llama-server's own prompt time per turn (ms): ${llamaPromptMs}`,
    `the two servers' greedy replies were the same ids in ${agreed} of ${r.turns.length} turns`,
  ].join('\n');
}
