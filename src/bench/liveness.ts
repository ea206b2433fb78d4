// `loom bench liveness`: does the serving thread stay responsive while one client sends
// long texts? A `loom serve` child process gets one heavy request per scenario (a 4 MiB
// /tokenize, a 4 MiB completion refused by its bytes, one tokenized in full and truncated,
// a 4 MiB chat rendered and tokenized, a /detokenize of a long id list, a completion
// fanning out to many prompts) while /health is probed back to back and another client
// streams completions; the report gives each scenario's status and time, the /health
// latencies during it (p50, p99, max) and the gaps between the other client's chunks, plus
// the heap before and after a series of refused 4 MiB prompts (refused-memory.ts).
import { loadavg } from 'node:os';
import { LoomError } from '../errors.js';
import { startLoomServer } from './loom-server.js';
import { measureRefusedMemory } from './refused-memory.js';
import type { RefusedMemory } from './refused-memory.js';
import { percentile } from './stats.js';

export interface LivenessOptions {
  readonly model: string;
  /** --tokenizer-pool-size of the server (0: everything on the serving thread) */
  readonly poolSize: number;
  /** bytes of the long prompts */
  readonly promptBytes: number;
  /** prompts of the fan-out completion */
  readonly fanOut: number;
  /** refused 4 MiB prompts (completion, chat, Ollama in turn) before memory is read again */
  readonly refusedPrompts: number;
}

export interface ScenarioResult {
  readonly name: string;
  readonly status: number;
  readonly ms: number;
  /** /health probes answered while the request ran */
  readonly probes: number;
  readonly healthP50Ms: number;
  readonly healthP99Ms: number;
  readonly healthMaxMs: number;
  /** another client's streams, back to back meanwhile: gaps between their chunks */
  readonly streamGapP99Ms: number;
  readonly streamGapMaxMs: number;
}

export interface LivenessReport {
  readonly options: LivenessOptions;
  readonly scenarios: ScenarioResult[];
  /** measured in process, after full collections (refused-memory.ts) */
  readonly memory: RefusedMemory;
  /** the 1-minute load average before and after (the machine's other work skews every figure) */
  readonly loadavg: readonly [number, number];
}

/** a template for models without one, so the chat scenario renders something (ChatML) */
const CHATML = "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

function prose(bytes: number): string {
  const line = 'Once upon a time, there was a little girl named Lily. She liked to play in the park with her friends. ';
  return line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
}

/** streaming completions back to back until `done()`: the gaps between chunks, ms */
async function streamGaps(url: string, model: string, done: () => boolean): Promise<number[]> {
  const gaps: number[] = [];
  const body = JSON.stringify({ model, prompt: 'Once upon a time', max_tokens: 64, ignore_eos: true, stream: true });
  while (!done()) {
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (!res.ok || !res.body) throw new LoomError(`the side stream got ${res.status}`);
    let last: number | undefined;
    for await (const _chunk of res.body) {
      const now = performance.now();
      if (last !== undefined) gaps.push(now - last);
      last = now;
    }
  }
  return gaps;
}

/** /health back to back (5 ms apart) and another client's streams while `work` runs */
async function during(url: string, model: string, name: string, work: () => Promise<Response>): Promise<ScenarioResult> {
  const latencies: number[] = [];
  let done = false;
  const start = performance.now();
  const running = work().then(async (res) => {
    await res.arrayBuffer();
    return res;
  }).finally(() => (done = true));
  const streaming = streamGaps(url, model, () => done);
  while (!done) {
    const t = performance.now();
    const h = await fetch(`${url}/health`);
    await h.arrayBuffer();
    if (h.status !== 200) throw new LoomError(`/health answered ${h.status} during ${name}`);
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 5));
  }
  const res = await running;
  const ms = performance.now() - start;
  const sorted = latencies.sort((a, b) => a - b);
  const gaps = (await streaming).sort((a, b) => a - b);
  return {
    name,
    status: res.status,
    ms,
    probes: sorted.length,
    healthP50Ms: percentile(sorted, 50),
    healthP99Ms: percentile(sorted, 99),
    healthMaxMs: sorted.at(-1) ?? NaN,
    streamGapP99Ms: percentile(gaps, 99),
    streamGapMaxMs: gaps.at(-1) ?? NaN,
  };
}

export async function runLiveness(o: LivenessOptions, log: (line: string) => void): Promise<LivenessReport> {
  const load0 = loadavg()[0]!;
  const server = await startLoomServer(o.model, ['--tokenizer-pool-size', String(o.poolSize), '--chat-template', CHATML, '--disable-log-requests', '--kv-cache-memory', '64MiB'], () => {});
  let results: ScenarioResult[];
  try {
    const { url } = server;
    const model = ((await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] }).data[0]!.id;
    // bodies serialized before the probes start: the client's own work is not the server's
    const json = (body: object): string => JSON.stringify({ model, ...body });
    const post = (path: string, body: string) => (): Promise<Response> => fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = prose(o.promptBytes);
    const kib = `${Math.round(o.promptBytes / 1024)} KiB`;
    const tokenizeBody = json({ prompt: text });
    const ids = ((await (await post('/tokenize', json({ prompt: text.slice(0, 256 * 1024) }))()).json()) as { tokens: number[] }).tokens;
    const manyIds = Array.from({ length: 1 << 20 }, (_, i) => ids[i % ids.length]!);
    const scenarios: [string, () => Promise<Response>][] = [
      [`/tokenize ${kib}`, post('/tokenize', tokenizeBody)],
      [`completion ${kib} (refused by its bytes)`, post('/v1/completions', json({ prompt: text, max_tokens: 4 }))],
      [`completion ${kib}, truncate_prompt_tokens 16`, post('/v1/completions', json({ prompt: text, max_tokens: 4, truncate_prompt_tokens: 16 }))],
      [`/tokenize chat ${kib} (rendered + tokenized)`, post('/tokenize', json({ messages: [{ role: 'user', content: text }] }))],
      ['/detokenize 1 Mi ids', post('/detokenize', json({ tokens: manyIds }))],
      [`completion of ${o.fanOut} prompts`, post('/v1/completions', json({ prompt: Array.from({ length: o.fanOut }, (_, i) => `Once upon a time ${i}`), max_tokens: 2 }))],
    ];
    results = [];
    for (const [name, work] of scenarios) {
      const r = await during(url, model, name, work);
      log(`${name}: ${r.status} in ${r.ms.toFixed(0)} ms; /health ×${r.probes} p50 ${r.healthP50Ms.toFixed(1)} ms, max ${r.healthMaxMs.toFixed(1)} ms; stream gaps max ${r.streamGapMaxMs.toFixed(1)} ms`);
      results.push(r);
    }
  } finally {
    await server.stop();
  }
  const memory = await measureRefusedMemory(o.model, CHATML, prose(4 << 20), Math.ceil(o.refusedPrompts / 3));
  log(`after ${memory.refused} refused 4 MiB prompts: heap ${memory.heapBeforeBytes} → ${memory.heapAfterBytes} bytes`);
  return { options: o, scenarios: results, memory, loadavg: [load0, loadavg()[0]!] };
}

export function formatLivenessReport(r: LivenessReport): string {
  const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const lines = [
    `loom bench liveness: ${r.options.model}, --tokenizer-pool-size ${r.options.poolSize} (load average ${r.loadavg[0].toFixed(2)} → ${r.loadavg[1].toFixed(2)})`,
    '',
    `${'scenario'.padEnd(48)} status      ms  probes  health p50  p99      max  stream gap p99      max`,
    ...r.scenarios.map(
      (s) =>
        `${s.name.padEnd(48)} ${String(s.status).padStart(6)} ${s.ms.toFixed(0).padStart(7)} ${String(s.probes).padStart(7)} ${s.healthP50Ms.toFixed(1).padStart(11)} ${s.healthP99Ms.toFixed(1).padStart(6)} ${s.healthMaxMs.toFixed(1).padStart(8)} ${s.streamGapP99Ms.toFixed(1).padStart(15)} ${s.streamGapMaxMs.toFixed(1).padStart(8)}`,
    ),
    '',
    `after ${r.memory.refused} refused 4 MiB prompts (in process, after full collections): heap used ${mib(r.memory.heapBeforeBytes)} → ${mib(r.memory.heapAfterBytes)}, RSS ${mib(r.memory.rssBeforeBytes)} → ${mib(r.memory.rssAfterBytes)}`,
  ];
  return lines.join('\n');
}
