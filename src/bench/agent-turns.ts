// `loom bench agent-turns`: a recorded agent transcript (Claude Code's: a long system prompt,
// its tool definitions, then tool_use / tool_result turns) replayed turn by turn over HTTP
// against `loom serve` and llama.cpp's llama-server on the same GGUF file. Both serve
// Anthropic's /v1/messages, so both get the same request bodies: each turn is the transcript's
// history up to that turn's user message (the recorded assistant turns, never the model's own
// replies, so both sides see identical prompts), streamed, with a small max_tokens. Measured per
// turn and side: time to the first streamed delta, and the prompt and the prompt tokens served
// from the server's prefix cache (its message_start usage: cache_read_input_tokens). The sides
// alternate which goes first each turn, so a drifting machine load falls on both.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LoomError } from '../errors.js';
import { startLlamaServer } from './llama-server.js';
import { startLoomServer } from './loom-server.js';
import type { RunningServer } from './loom-server.js';
import { postSse } from './sse-post.js';
import { turnsTable } from './turns-table.js';
import type { SideTurn, TurnSides } from './turns-table.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Claude Code's fourth request of a recorded session (three tool calls and their results before it) */
export const DEFAULT_TRANSCRIPT = join(ROOT, 'test/fixtures/agents/claude-code-turn4.json');
export const ENDPOINT = '/v1/messages';

export interface AgentTurnsOptions {
  readonly model: string;
  /** a recorded /v1/messages request ({method, url, headers, body}) or its body alone */
  readonly transcript: string;
  /** a Jinja chat template both servers use instead of the model's (one that renders tools) */
  readonly chatTemplate?: string;
  /** a llama-server binary; without one only loom is measured */
  readonly llamaServer?: string;
  readonly llamaArgs?: readonly string[];
  readonly threads: number;
  /** tokens generated per turn (the first is the measured one) */
  readonly maxTokens: number;
  /** context length of both servers (loom's --max-model-len, llama-server's one slot) */
  readonly context: number;
}

export interface AgentTurn extends TurnSides {
  /** messages of the transcript this turn sends */
  readonly messages: number;
}

export interface AgentTurnsReport {
  readonly settings: AgentTurnsOptions;
  readonly endpoint: typeof ENDPOINT;
  readonly turns: AgentTurn[];
}

interface Message {
  readonly role: string;
  readonly content: unknown;
}

export interface Transcript {
  readonly system?: unknown;
  readonly tools?: unknown[];
  readonly messages: Message[];
}

/** The transcript's conversation (a recorded request's body, or the body itself). */
export function readTranscript(path: string): Transcript {
  const json = JSON.parse(readFileSync(path, 'utf8')) as { body?: Transcript } & Partial<Transcript>;
  const body = json.body ?? json;
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new LoomError(`${path}: no messages (a /v1/messages request body, or a recorded request with one)`);
  return { system: body.system, tools: body.tools, messages: body.messages };
}

/** How many messages each turn sends: the history up to each assistant message, then all of it. */
export function turnCuts(messages: readonly Message[]): number[] {
  const cuts = messages.flatMap((m, i) => (m.role === 'assistant' && i > 0 && messages[i - 1]!.role !== 'assistant' ? [i] : []));
  return messages.at(-1)!.role === 'assistant' ? cuts : [...cuts, messages.length];
}

/** The name the server serves its model under (its first /v1/models entry). */
async function servedModel(url: string): Promise<string> {
  const list = (await (await fetch(`${url}/v1/models`)).json()) as { data?: { id: string }[] };
  return list.data?.[0]?.id ?? 'default';
}

interface Usage {
  input_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

/** One streamed /v1/messages request: time to the first delta, and message_start's prompt split. */
async function streamTurn(url: string, body: object): Promise<SideTurn> {
  const start = performance.now();
  let ttftMs = -1;
  let usage: Usage | undefined;
  for await (const data of postSse(`${url}${ENDPOINT}`, body, { 'anthropic-version': '2023-06-01' })) {
    const event = data as { type: string; message?: { usage?: Usage }; error?: { message: string } };
    if (event.type === 'error') throw new LoomError(`${url}${ENDPOINT}: ${event.error?.message ?? JSON.stringify(data)}`);
    if (event.type === 'message_start') usage = event.message?.usage;
    if (ttftMs < 0 && event.type === 'content_block_delta') ttftMs = performance.now() - start;
  }
  if (!usage) throw new LoomError(`${url}${ENDPOINT}: the stream had no message_start`);
  const cached = usage.cache_read_input_tokens ?? 0;
  return { promptTokens: (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + cached, cachedTokens: cached, ttftMs: ttftMs < 0 ? performance.now() - start : ttftMs };
}

export async function runAgentTurns(o: AgentTurnsOptions, log: (line: string) => void): Promise<AgentTurnsReport> {
  const transcript = readTranscript(o.transcript);
  const cuts = turnCuts(transcript.messages);
  const servers: { side: 'loom' | 'llamacpp'; server: RunningServer; model: string }[] = [];
  try {
    const template = o.chatTemplate !== undefined ? ['--chat-template', o.chatTemplate] : [];
    const loom = await startLoomServer(o.model, ['--threads', String(o.threads), '--max-num-seqs', '1', '--max-model-len', String(o.context), ...template], log);
    servers.push({ side: 'loom', server: loom, model: await servedModel(loom.url) });
    if (o.llamaServer !== undefined) {
      const llamaTemplate = o.chatTemplate !== undefined ? ['--chat-template-file', o.chatTemplate] : [];
      const llama = await startLlamaServer(o.llamaServer, o.model, { threads: o.threads, parallel: 1, slotContext: o.context, extraArgs: [...llamaTemplate, ...(o.llamaArgs ?? [])] }, log);
      servers.push({ side: 'llamacpp', server: llama, model: await servedModel(llama.url) });
    }
    // a first short request each, not measured: page in the weights, start the thread pools
    for (const { server, model } of servers) await streamTurn(server.url, { model, max_tokens: 1, stream: true, messages: [{ role: 'user', content: 'Hello.' }] });
    const turns: AgentTurn[] = [];
    for (const [t, cut] of cuts.entries()) {
      const order = t % 2 === 0 ? servers : [...servers].reverse();
      const got: Partial<Record<'loom' | 'llamacpp', SideTurn>> = {};
      for (const { side, server, model } of order) {
        const body = { model, max_tokens: o.maxTokens, stream: true, ...(transcript.system !== undefined && { system: transcript.system }), ...(transcript.tools && { tools: transcript.tools }), messages: transcript.messages.slice(0, cut) };
        got[side] = await streamTurn(server.url, body);
        log(`turn ${t + 1} ${side}: ${got[side].promptTokens} prompt tokens, ${got[side].cachedTokens} cached, TTFT ${got[side].ttftMs.toFixed(0)} ms`);
      }
      turns.push({ turn: t + 1, messages: cut, loom: got.loom!, ...(got.llamacpp && { llamacpp: got.llamacpp }) });
    }
    return { settings: o, endpoint: ENDPOINT, turns };
  } finally {
    for (const { server } of servers) await server.stop();
  }
}

export function formatAgentTurnsReport(r: AgentTurnsReport): string {
  const peer = r.turns.some((t) => t.llamacpp);
  const s = r.settings;
  return [
    `agent turns: ${s.transcript} replayed through ${r.endpoint}${peer ? ' on both sides' : ' (loom only: no --llama-server)'}, ${r.turns.length} turns, ${s.threads} threads, ${s.maxTokens} tokens a reply` +
      (s.chatTemplate !== undefined ? `, chat template ${s.chatTemplate}` : ''),
    '',
    ...turnsTable(r.turns),
  ].join('\n');
}
