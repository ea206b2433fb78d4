// `loom bench embed-peer`: embedding throughput, loom serve against llama.cpp's llama-server
// --embeddings on the same GGUF with the same threads (issue 39's benchmark). Per case (inputs
// per request × tokens per input) each server answers the same POST /v1/embeddings requests
// of token ids (new ones each round, so no prompt cache answers them), one request at a time,
// in alternating rounds; the figure is inputs a second.
// The first request's vectors of the two servers are compared (cosine), so a fast wrong
// answer shows.
import { availableParallelism, loadavg } from 'node:os';
import { Rng } from '../engine/rng.js';
import { InvalidArgumentError, LoomError } from '../errors.js';
import { loadModel } from '../model/load.js';
import { vocabularyIds } from './datasets.js';
import { ensureLlamaServer, startLlamaServer } from './llama-server.js';
import type { ServersRun } from './llama-server.js';
import { bodyText, postJson } from './sse-post.js';
import { cosine } from './stats.js';
import { startLoomServer } from './loom-server.js';
import type { RunningServer } from './loom-server.js';

export interface EmbedPeerOptions {
  readonly model: string;
  readonly threads?: number;
  /** inputs per request */
  readonly batches: readonly number[];
  /** tokens per input */
  readonly lengths: readonly number[];
  /** inputs each server embeds per case and round (whole requests: at least one) */
  readonly inputs: number;
  readonly rounds: number;
  readonly seed: number;
  /** a llama-server binary (default: built once from the source node-llama-cpp ships) */
  readonly llamaServer?: string;
  /** llama-server's -b and -ub: an encoder's input must fit one ubatch */
  readonly ubatch: number;
  readonly loomArgs: readonly string[];
  readonly llamaArgs: readonly string[];
}

export const EMBED_PEER_DEFAULTS = { batches: [1, 64], lengths: [16, 512], inputs: 128, rounds: 3, ubatch: 2048 } as const;

export type Side = 'loom' | 'llama-server';

export interface EmbedRun {
  readonly side: Side;
  readonly batch: number;
  readonly length: number;
  readonly round: number;
  readonly inputs: number;
  readonly seconds: number;
  readonly inputsPerSecond: number;
}

export interface EmbedCase {
  readonly batch: number;
  readonly length: number;
  /** median inputs a second of each side over the rounds */
  readonly loom: number;
  readonly llama: number;
  /** loom / llama-server */
  readonly ratio: number;
  /** the lowest cosine between the two servers' vectors of the same input (first request) */
  readonly minCosine: number;
}

export interface EmbedPeerReport extends ServersRun {
  readonly options: EmbedPeerOptions & { readonly threads: number };
  readonly dimensions: number;
  readonly runs: EmbedRun[];
  readonly cases: EmbedCase[];
}

const SERVED_NAME = 'embed-peer';

/** Starts both servers on the model, runs every case in alternating rounds, stops them. */
export async function runEmbedPeer(o: EmbedPeerOptions, log: (line: string) => void): Promise<EmbedPeerReport> {
  if (o.batches.length === 0 || o.lengths.length === 0) throw new InvalidArgumentError('give at least one batch and one length');
  const threads = o.threads ?? availableParallelism();
  const model = loadModel(o.model);
  const maxLen = Math.max(...o.lengths);
  if (maxLen > model.config.contextLength) throw new InvalidArgumentError(`inputs of ${maxLen} tokens exceed the model's context of ${model.config.contextLength}`);
  if (!model.config.pooling) throw new InvalidArgumentError(`${o.model} is not an embedding model (no pooling_type)`);
  if (o.ubatch < maxLen) throw new InvalidArgumentError(`--ubatch ${o.ubatch} is below the longest input (${maxLen}): llama-server computes an encoder's input in one ubatch`);
  const vocab = vocabularyIds(model.tokenizer, model.config.vocabSize);
  const rng = new Rng(o.seed);
  const draw = (n: number): number[] => Array.from({ length: n }, () => vocab[Math.floor(rng.next() * vocab.length)]!);
  // the same inputs for both servers, new ones for the warm-up and for every round: a server that
  // keeps prompts' KV (llama-server's slots and --cache-ram, for a decoder such as Qwen3-Embedding)
  // must not answer a round from its cache. Per case: the warm-up request, then each round's requests
  const requests = new Map<string, { warmup: number[][]; rounds: number[][][][] }>();
  for (const length of o.lengths) {
    for (const batch of o.batches) {
      const count = Math.max(1, Math.ceil(o.inputs / batch));
      const request = (): number[][] => Array.from({ length: batch }, () => draw(length));
      requests.set(`${batch}x${length}`, { warmup: request(), rounds: Array.from({ length: o.rounds }, () => Array.from({ length: count }, request)) });
    }
  }
  const binary = o.llamaServer ?? (await ensureLlamaServer(log)).binary;
  const parallel = Math.max(...o.batches);
  const llamaExtra = ['--embeddings', '-b', String(o.ubatch), '-ub', String(o.ubatch), '--cache-ram', '0', ...o.llamaArgs];
  const loomArgs = ['--served-model-name', SERVED_NAME, '--threads', String(threads), ...o.loomArgs];
  const loadBefore = loadavg()[0]!;
  const servers: { loom?: RunningServer; llama?: RunningServer & { args: readonly string[] } } = {};
  const runs: EmbedRun[] = [];
  const cases: EmbedCase[] = [];
  let dimensions = 0;
  try {
    servers.loom = await startLoomServer(o.model, loomArgs, log);
    servers.llama = await startLlamaServer(binary, o.model, { threads, parallel, slotContext: maxLen + 8, extraArgs: llamaExtra }, log);
    const url = (side: Side): string => (side === 'loom' ? servers.loom! : servers.llama!).url;
    for (const length of o.lengths) {
      for (const batch of o.batches) {
        const { warmup, rounds } = requests.get(`${batch}x${length}`)!;
        // warm-up, and the agreement check: the same request on each side
        const [a, b] = [await embedRequest(url('loom'), warmup), await embedRequest(url('llama-server'), warmup)];
        dimensions = a[0]!.length;
        const minCosine = Math.min(...a.map((v, i) => cosine(v, b[i]!)));
        const perSide: Record<Side, number[]> = { loom: [], 'llama-server': [] };
        for (let round = 0; round < o.rounds; round++) {
          // alternate which side goes first, so a drift in the machine's speed falls on both
          const order: Side[] = round % 2 === 0 ? ['loom', 'llama-server'] : ['llama-server', 'loom'];
          for (const side of order) {
            const start = performance.now();
            for (const req of rounds[round]!) await embedRequest(url(side), req);
            const seconds = (performance.now() - start) / 1000;
            const inputs = rounds[round]!.length * batch;
            runs.push({ side, batch, length, round, inputs, seconds, inputsPerSecond: inputs / seconds });
            perSide[side].push(inputs / seconds);
            log(`${side.padEnd(12)} batch ${batch}, ${length} tokens, round ${round + 1}: ${(inputs / seconds).toFixed(1)} inputs/s`);
          }
        }
        const loom = median(perSide.loom);
        const llama = median(perSide['llama-server']);
        cases.push({ batch, length, loom, llama, ratio: loom / llama, minCosine });
      }
    }
    return {
      options: { ...o, threads },
      llamaServer: { binary, args: servers.llama.args },
      loomArgs,
      dimensions,
      loadBefore,
      loadAfter: loadavg()[0]!,
      runs,
      cases,
    };
  } finally {
    await Promise.all([servers.loom?.stop(), servers.llama?.stop()]);
  }
}

/** POST /v1/embeddings with token-id inputs; the vectors in input order */
export async function embedRequest(baseUrl: string, inputs: readonly (readonly number[])[]): Promise<number[][]> {
  // postJson, not fetch: 64 inputs of 512 tokens of a 0.6B model take over 300 s on 2 cores,
  // and fetch gives up on a response's headers after 300 s
  const res = await postJson(`${baseUrl}/v1/embeddings`, { model: SERVED_NAME, input: inputs, encoding_format: 'float' });
  const text = await bodyText(res);
  if (res.statusCode !== 200) throw new LoomError(`${baseUrl}/v1/embeddings answered ${res.statusCode}: ${text.slice(0, 300)}`);
  const body = JSON.parse(text) as { data?: { index: number; embedding: number[] }[] };
  if (!Array.isArray(body.data) || body.data.length !== inputs.length) throw new LoomError(`${baseUrl}/v1/embeddings returned ${body.data?.length ?? 'no'} vectors for ${inputs.length} inputs`);
  return [...body.data].sort((x, y) => x.index - y.index).map((d) => d.embedding);
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
