// `loom bench chat-turns`: a multi-turn conversation through the engine (this thread), each
// turn's prompt the whole history so far (system prompt, every user message and reply) plus a
// new user message, as a chat client resends it; time to first token per turn with the prefix
// cache on and off. The two engines take turns (on's turn i, then off's turn i) so a loaded
// machine slows both alike. Token ids are drawn from a seeded generator (no text needed).
import { EngineCore, now } from '../engine/engine.js';
import { resolveEngineConfig } from '../engine/options.js';
import type { EngineOptions } from '../engine/options.js';
import { resolveSamplingParams } from '../engine/sampling-params.js';
import { Rng } from '../engine/rng.js';
import { selectKernels } from '../kernels/select.js';
import { loadModel } from '../model/load.js';

/** The conversation of both chat-turns benchmarks (this one and chat-turns-peer): its lengths and seed. */
export interface ChatShape {
  readonly model: string;
  readonly turns: number;
  readonly systemLen: number;
  readonly userLen: number;
  readonly replyLen: number;
  readonly threads?: number;
  readonly seed: number;
}

/** Tokens the conversation's last prompt and its reply take. */
export function conversationLength(o: Pick<ChatShape, 'turns' | 'systemLen' | 'userLen' | 'replyLen'>): number {
  return o.systemLen + o.turns * (o.userLen + o.replyLen);
}

export interface ChatTurnsOptions extends ChatShape {
  readonly kvCacheMemory: string;
  readonly maxNumSeqs: number;
  readonly stateCheckpoints?: number;
}

export interface ChatTurn {
  readonly turn: number;
  readonly promptTokens: number;
  /** per engine: time to first token (ms) and the prompt tokens the prefix cache held */
  readonly on: { readonly ttftMs: number; readonly cachedTokens: number };
  readonly off: { readonly ttftMs: number };
}

export interface ChatTurnsReport {
  readonly settings: ChatTurnsOptions;
  readonly model: string;
  readonly startupNotes: string[];
  readonly turns: ChatTurn[];
}

/** Runs one request to its end; its tokens, time to first token and cached prompt tokens. */
function runTurn(e: EngineCore, id: string, prompt: readonly number[], replyLen: number): { tokens: number[]; ttftMs: number; cached: number } {
  const start = now();
  const params = resolveSamplingParams({ temperature: 0, maxTokens: replyLen, ignoreEos: true });
  const refused = e.add({ type: 'add', id, promptIds: Int32Array.from(prompt), params, arrivalTime: start });
  if (refused) throw new Error(`the engine refused turn ${id}: ${refused.error}`);
  const tokens: number[] = [];
  let ttftMs = -1;
  let cached = 0;
  while (e.hasWork) {
    for (const d of e.step()?.deltas ?? []) {
      if (d.cachedPromptTokens !== undefined) cached = d.cachedPromptTokens;
      if (ttftMs < 0 && d.tokenIds.length > 0) ttftMs = now() - start;
      tokens.push(...d.tokenIds);
    }
  }
  return { tokens, ttftMs, cached };
}

export function runChatTurnsBench(o: ChatTurnsOptions, log?: (line: string) => void): ChatTurnsReport {
  const model = loadModel(o.model);
  const kernels = selectKernels('auto', o.threads);
  const maxModelLen = conversationLength(o) + 1;
  const engine = (enablePrefixCaching: boolean): EngineCore => {
    const opts: EngineOptions = {
      model: o.model, kvCacheMemory: o.kvCacheMemory, maxNumSeqs: o.maxNumSeqs, maxModelLen, enablePrefixCaching,
      ...(o.stateCheckpoints !== undefined && { stateCheckpoints: o.stateCheckpoints }),
    };
    return new EngineCore(model, kernels, resolveEngineConfig(opts, model.config, [...model.tokenizer.stopIds]));
  };
  const on = engine(true);
  const off = engine(false);
  if (!on.config.enablePrefixCaching) throw new Error('prefix caching did not turn on for this model (no state checkpoints fit?)');
  const rng = new Rng(o.seed);
  const vocab = model.config.vocabSize;
  const draw = (n: number) => Array.from({ length: n }, () => Math.floor(rng.next() * vocab));
  const system = draw(o.systemLen);
  let historyOn = [...system];
  let historyOff = [...system];
  const turns: ChatTurn[] = [];
  for (let t = 1; t <= o.turns; t++) {
    const user = draw(o.userLen);
    const promptOn = [...historyOn, ...user];
    const promptOff = [...historyOff, ...user];
    const a = runTurn(on, `on${t}`, promptOn, o.replyLen);
    const b = runTurn(off, `off${t}`, promptOff, o.replyLen);
    historyOn = [...promptOn, ...a.tokens];
    historyOff = [...promptOff, ...b.tokens];
    const turn = { turn: t, promptTokens: promptOn.length, on: { ttftMs: a.ttftMs, cachedTokens: a.cached }, off: { ttftMs: b.ttftMs } };
    turns.push(turn);
    log?.(`turn ${t}: ${turn.promptTokens} prompt tokens, ${a.cached} cached: TTFT ${a.ttftMs.toFixed(0)} ms with the cache, ${b.ttftMs.toFixed(0)} ms without`);
  }
  const notes = [
    ...(on.checkpoints ? [`${on.checkpoints.numCheckpoints} state checkpoints (${JSON.stringify(on.checkpoints.stats)})`] : []),
    ...(on.windowCheckpoints ? [`${on.windowCheckpoints.numCheckpoints} window checkpoints (${JSON.stringify(on.windowCheckpoints.stats)})`] : []),
  ];
  return { settings: o, model: model.config.arch, startupNotes: notes, turns };
}

export function formatChatTurnsReport(r: ChatTurnsReport): string {
  const rows = r.turns.map((t) => `| ${t.turn} | ${t.promptTokens} | ${t.on.cachedTokens} | ${t.on.ttftMs.toFixed(0)} | ${t.off.ttftMs.toFixed(0)} | ${(t.off.ttftMs / t.on.ttftMs).toFixed(1)}× |`);
  const sum = (f: (t: ChatTurn) => number) => r.turns.reduce((n, t) => n + f(t), 0);
  return [
    `chat turns: ${r.model}, system ${r.settings.systemLen} tokens, ${r.settings.userLen} per user message, ${r.settings.replyLen} per reply` +
      (r.startupNotes.length > 0 ? `; ${r.startupNotes.join('; ')}` : ''),
    '',
    '| turn | prompt tokens | cached | TTFT, cache on (ms) | TTFT, cache off (ms) | off / on |',
    '| ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    `| all | ${sum((t) => t.promptTokens)} | ${sum((t) => t.on.cachedTokens)} | ${sum((t) => t.on.ttftMs).toFixed(0)} | ${sum((t) => t.off.ttftMs).toFixed(0)} | ${(sum((t) => t.off.ttftMs) / sum((t) => t.on.ttftMs)).toFixed(1)}× |`,
  ].join('\n');
}
