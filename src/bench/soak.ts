// `loom bench soak`: drives a running server with a seeded mix of request kinds (plain,
// streamed, chat, streams cut by the client, n > 1 with logprobs, bad requests, tokenize)
// and samples its memory (the process_* / nodejs_* series of /metrics), KV-cache use and
// latencies every `sampleEvery` requests. The figure to watch: RSS and heap growth per
// 1,000 requests after warm-up (a least-squares slope), which should be 0 within noise.
import { Rng } from '../engine/rng.js';
import { percentile } from './stats.js';

export interface SoakOptions {
  readonly baseUrl: string;
  readonly model: string;
  readonly requests: number;
  readonly concurrency: number;
  readonly sampleEvery: number;
  /** the share of requests before the growth fit starts */
  readonly warmupShare: number;
  readonly maxTokens: number;
  readonly seed: number;
  readonly apiKey?: string | undefined;
}

export type SoakKind = 'plain' | 'stream' | 'chat' | 'cut' | 'n3-logprobs' | 'bad' | 'tokenize';
const MIX: [SoakKind, number][] = [['plain', 0.25], ['stream', 0.2], ['chat', 0.15], ['cut', 0.12], ['n3-logprobs', 0.1], ['bad', 0.1], ['tokenize', 0.08]];

export interface SoakSample {
  readonly requests: number;
  readonly seconds: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly kvCacheUsage: number;
  readonly running: number;
  readonly waiting: number;
  /** latency of the requests since the previous sample, ms */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface SoakReport {
  readonly options: SoakOptions;
  readonly samples: SoakSample[];
  readonly counts: Record<SoakKind, number>;
  /** requests whose status or body was not what their kind expects */
  readonly failures: number;
  readonly failureExamples: string[];
  /** bytes per 1,000 requests after warm-up */
  readonly rssGrowthPer1k: number;
  readonly heapGrowthPer1k: number;
  /** KV usage and running/waiting after the last request (all should be 0) */
  readonly after: { kvCacheUsage: number; running: number; waiting: number };
}

function pickKind(rng: Rng): SoakKind {
  let u = rng.next();
  for (const [kind, share] of MIX) if ((u -= share) < 0) return kind;
  return 'plain';
}

async function scrape(baseUrl: string): Promise<Omit<SoakSample, 'requests' | 'seconds' | 'p50Ms' | 'p99Ms'>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const get = (name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    rssBytes: get('process_resident_memory_bytes'),
    heapUsedBytes: get('nodejs_heap_size_used_bytes'),
    kvCacheUsage: get('vllm:kv_cache_usage_perc'),
    running: get('vllm:num_requests_running'),
    waiting: get('vllm:num_requests_waiting'),
  };
}

/** least-squares slope of y over x */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

/** Sends one request of a kind; returns an error text when the server's answer was not the expected one. */
async function send(o: SoakOptions, kind: SoakKind, i: number, rng: Rng): Promise<string | undefined> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(o.apiKey && { authorization: `Bearer ${o.apiKey}` }) };
  const post = (path: string, body: object, signal?: AbortSignal) => fetch(`${o.baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal });
  const prompt = `Request ${i}: once upon a time there was`;
  const common = { model: o.model, max_tokens: o.maxTokens, temperature: 0.8, seed: i, ignore_eos: true };
  const expect = async (r: Response, status: number, pattern?: RegExp): Promise<string | undefined> => {
    const text = await r.text();
    if (r.status !== status) return `${kind}: ${r.status} ${text.slice(0, 200)}`;
    if (pattern && !pattern.test(text)) return `${kind}: unexpected body ${text.slice(0, 200)}`;
    return undefined;
  };
  switch (kind) {
    case 'plain':
      return expect(await post('/v1/completions', { ...common, prompt }), 200, /"finish_reason":"length"/);
    case 'stream':
      return expect(await post('/v1/completions', { ...common, prompt, stream: true, stream_options: { include_usage: true } }), 200, /data: \[DONE\]\n\n$/);
    case 'chat':
      return expect(await post('/v1/chat/completions', { ...common, max_tokens: undefined, max_completion_tokens: o.maxTokens, messages: [{ role: 'user', content: prompt }] }), 200, /"choices"/);
    case 'n3-logprobs':
      return expect(await post('/v1/completions', { ...common, prompt, n: 3, logprobs: 3 }), 200, /"index":2/);
    case 'bad':
      return expect(await post('/v1/completions', { ...common, prompt, temperature: 'hot' }), 400, /"error"/);
    case 'tokenize':
      return expect(await post('/tokenize', { model: o.model, prompt: prompt.repeat(4) }), 200, /"tokens"/);
    case 'cut': {
      const controller = new AbortController();
      try {
        const r = await post('/v1/completions', { ...common, prompt, stream: true }, controller.signal);
        if (r.status !== 200) return `cut: ${r.status}`;
        const reader = r.body!.getReader();
        const chunks = Math.floor(rng.next() * 4);
        for (let c = 0; c < chunks; c++) if ((await reader.read()).done) break;
        controller.abort();
      } catch (err) {
        if (!(err instanceof Error && err.name === 'AbortError')) return `cut: ${String(err)}`;
      }
      return undefined;
    }
  }
}

export async function runSoak(o: SoakOptions, progress?: (line: string) => void): Promise<SoakReport> {
  const rng = new Rng(o.seed);
  const counts = Object.fromEntries(MIX.map(([k]) => [k, 0])) as Record<SoakKind, number>;
  const samples: SoakSample[] = [];
  const failureExamples: string[] = [];
  let failures = 0;
  let next = 0;
  let done = 0;
  let window: number[] = [];
  const start = performance.now();
  let sampling = Promise.resolve();
  const sample = async (): Promise<void> => {
    const lat = window;
    window = [];
    const s = { requests: done, seconds: (performance.now() - start) / 1000, ...(await scrape(o.baseUrl)), p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99) };
    samples.push(s);
    progress?.(`${s.requests} requests, RSS ${(s.rssBytes / 2 ** 20).toFixed(1)} MiB, heap ${(s.heapUsedBytes / 2 ** 20).toFixed(1)} MiB, p99 ${s.p99Ms.toFixed(0)} ms`);
  };
  await sample();
  const worker = async (): Promise<void> => {
    while (next < o.requests) {
      const i = next++;
      const kind = pickKind(rng);
      counts[kind]++;
      const t0 = performance.now();
      const problem = await send(o, kind, i, rng).catch((err: unknown) => `${kind}: ${String(err)}`);
      if (kind !== 'cut' && kind !== 'bad') window.push(performance.now() - t0);
      if (problem) {
        failures++;
        if (failureExamples.length < 5) failureExamples.push(problem);
      }
      if (++done % o.sampleEvery === 0) sampling = sampling.then(sample);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  await sampling;
  // the server's gauges settle once the last aborts are processed
  let after = await scrape(o.baseUrl);
  for (let i = 0; i < 50 && (after.running > 0 || after.waiting > 0 || after.kvCacheUsage > 0); i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = await scrape(o.baseUrl);
  }
  if (done % o.sampleEvery !== 0) await sample();
  const fit = samples.filter((s) => s.requests >= o.requests * o.warmupShare);
  const xs = fit.map((s) => s.requests / 1000);
  return {
    options: o,
    samples,
    counts,
    failures,
    failureExamples,
    rssGrowthPer1k: slope(xs, fit.map((s) => s.rssBytes)),
    heapGrowthPer1k: slope(xs, fit.map((s) => s.heapUsedBytes)),
    after: { kvCacheUsage: after.kvCacheUsage, running: after.running, waiting: after.waiting },
  };
}
