// `loom bench scaleout`: what prefix-cache-aware routing buys over round robin, by simulation.
// Starts N local `loom serve` replicas with small KV caches, each publishing KV events to one
// index (kv-router.ts), and replays a seeded multi-turn workload: conversations grouped under
// shared system prompts, each turn = the conversation so far + a new user message. Two client-side
// policies pick the replica of every turn: round robin, and "the replica whose KV events show the
// longest cached prefix" (ties: fewest requests in flight). Replicas start fresh for each policy.
// Reported per policy: TTFT and E2E, and the replicas' own prefix-cache hit rate (from /metrics).
import { Rng } from '../engine/rng.js';
import { KvRouterIndex } from './kv-router.js';
import { startLoomServer } from './loom-server.js';
import type { RunningServer } from './loom-server.js';
import { mean, percentile } from './stats.js';
import { sseData } from './sse-data.js';

export const ROUTING_POLICIES = ['round-robin', 'prefix-aware'] as const;
export type RoutingPolicy = (typeof ROUTING_POLICIES)[number];

export interface ScaleoutOptions {
  readonly model: string;
  readonly vocabSize: number;
  readonly replicas: number;
  readonly threadsPerReplica: number;
  readonly kvCacheMemory: string;
  readonly blockSize: number;
  readonly conversations: number;
  readonly groups: number;
  readonly systemTokens: number;
  readonly turns: number;
  readonly userTokens: number;
  readonly outputTokens: number;
  readonly concurrency: number;
  readonly seed: number;
}

export interface PolicyReport {
  readonly policy: RoutingPolicy;
  readonly requests: number;
  readonly failures: number;
  readonly ttftMs: { readonly mean: number; readonly median: number; readonly p99: number };
  readonly e2eMeanMs: number;
  readonly durationS: number;
  /** prefix-cache hits / queries in tokens, summed over the replicas */
  readonly hitRate: number;
  /** the chosen replica's cached leading blocks as the index saw them, mean per request */
  readonly routedCachedBlocks: number;
  readonly kvEvents: number;
}

interface Conversation {
  readonly group: number;
  readonly userTurns: readonly number[][];
}

/** the seeded workload: system prompts per group, user messages per turn */
export function makeWorkload(o: ScaleoutOptions): { systems: number[][]; conversations: Conversation[] } {
  const rng = new Rng(o.seed);
  // ids from the upper part of the vocabulary: no special or control tokens
  const low = Math.min(1000, Math.floor(o.vocabSize / 2));
  const ids = (n: number) => Array.from({ length: n }, () => low + Math.floor(rng.next() * (o.vocabSize - low)));
  const systems = Array.from({ length: o.groups }, () => ids(o.systemTokens));
  const conversations = Array.from({ length: o.conversations }, (_, i) => ({
    group: i % o.groups,
    userTurns: Array.from({ length: o.turns }, () => ids(o.userTokens)),
  }));
  return { systems, conversations };
}

export async function runScaleout(o: ScaleoutOptions, policy: RoutingPolicy, log: (line: string) => void): Promise<PolicyReport> {
  const index = await KvRouterIndex.start(o.blockSize);
  const servers: RunningServer[] = [];
  try {
    for (let r = 0; r < o.replicas; r++) {
      servers.push(await startLoomServer(o.model, [
        '--served-model-name', 'bench', '--threads', String(o.threadsPerReplica), '--kv-cache-memory', o.kvCacheMemory,
        '--block-size', String(o.blockSize), '--kv-events-endpoint', index.endpoint, '--kv-events-topic', `kv@replica-${r}@bench`,
      ], log));
    }
    await new Promise((r) => setTimeout(r, 300)); // ZeroMQ connections settle before the first events
    const before = await Promise.all(servers.map((s) => prefixCounters(s.url)));
    const { systems, conversations } = makeWorkload(o);
    const inFlight = new Array<number>(o.replicas).fill(0);
    let next = 0;
    const ttft: number[] = [], e2e: number[] = [], routedBlocks: number[] = [];
    let failures = 0;
    const pick = (prompt: number[]): number => {
      const rr = next++ % o.replicas;
      if (policy === 'round-robin') return rr;
      let best = rr, bestBlocks = -1;
      for (let k = 0; k < o.replicas; k++) {
        const r = (rr + k) % o.replicas;
        const blocks = index.cachedBlocks(`replica-${r}`, prompt);
        if (blocks > bestBlocks || (blocks === bestBlocks && inFlight[r]! < inFlight[best]!)) [best, bestBlocks] = [r, blocks];
      }
      return best;
    };
    const started = performance.now();
    let taken = 0;
    const worker = async (): Promise<void> => {
      while (taken < conversations.length) {
        const c = conversations[taken++]!;
        const history = [...systems[c.group]!];
        for (const user of c.userTurns) {
          history.push(...user);
          const r = pick(history);
          routedBlocks.push(index.cachedBlocks(`replica-${r}`, history));
          inFlight[r]!++;
          const out = await generate(servers[r]!.url, history, o.outputTokens);
          inFlight[r]!--;
          if (!out) {
            failures++;
            break;
          }
          ttft.push(out.ttftMs);
          e2e.push(out.e2eMs);
          history.push(...out.outputIds);
        }
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    const durationS = (performance.now() - started) / 1000;
    const after = await Promise.all(servers.map((s) => prefixCounters(s.url)));
    const hits = after.reduce((n, a, i) => n + a.hits - before[i]!.hits, 0);
    const queries = after.reduce((n, a, i) => n + a.queries - before[i]!.queries, 0);
    return {
      policy,
      requests: ttft.length,
      failures,
      ttftMs: { mean: mean(ttft), median: percentile(ttft, 50), p99: percentile(ttft, 99) },
      e2eMeanMs: mean(e2e),
      durationS,
      hitRate: queries > 0 ? hits / queries : 0,
      routedCachedBlocks: mean(routedBlocks),
      kvEvents: index.eventsSeen,
    };
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await index.close();
  }
}

/** streamed greedy /generate: time to the first output ids, and all of them */
async function generate(url: string, inputIds: number[], maxTokens: number): Promise<{ ttftMs: number; e2eMs: number; outputIds: number[] } | undefined> {
  const t0 = performance.now();
  const res = await fetch(`${url}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input_ids: inputIds, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true }),
  }).catch(() => undefined);
  if (!res?.ok || !res.body) return undefined;
  let ttftMs = NaN;
  const outputIds: number[] = [];
  for await (const data of sseData(res.body)) {
    if (data === '[DONE]') continue;
    const event = JSON.parse(data) as { output_ids?: number[]; error?: unknown };
    if (event.error !== undefined) return undefined;
    if (event.output_ids?.length) {
      if (Number.isNaN(ttftMs)) ttftMs = performance.now() - t0;
      outputIds.push(...event.output_ids);
    }
  }
  return { ttftMs, e2eMs: performance.now() - t0, outputIds };
}

async function prefixCounters(url: string): Promise<{ hits: number; queries: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^vllm:${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { hits: read('prefix_cache_hits_total'), queries: read('prefix_cache_queries_total') };
}
