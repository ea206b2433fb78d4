// `loom bench serve-peer`: the `bench serve` scenario against loom serve and against
// llama.cpp's llama-server (built from node-llama-cpp's source, see llama-server.ts) on the
// same GGUF with the same threads. Both servers are started once and stay up; the runs
// alternate between them (loom, llama-server, loom, …) so a change in the machine's state
// falls on both. Every run records the load average when it started.
import { availableParallelism } from 'node:os';
import { startLoomServer } from './loom-server.js';
import type { RunningServer } from './loom-server.js';
import { ensureLlamaServer, startLlamaServer } from './llama-server.js';
import { busyWarning, loadAverage } from './machine-load.js';
import { runServeBench } from './serve.js';
import type { ServeBenchOptions, ServeReport } from './serve.js';
import { STANDARD_SCENARIO } from './standard.js';

export interface ServePeerOptions {
  readonly model: string;
  readonly threads?: number;
  /** runs of every rate on each server */
  readonly rounds: number;
  /** Infinity = the standard scenario (all at once, concurrency-capped) */
  readonly rates: readonly number[];
  readonly numPrompts: number;
  readonly maxConcurrency: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly seed: number;
  /** more `loom serve` flags (e.g. --step-time-factor 3) */
  readonly loomArgs: readonly string[];
}

export const SYSTEMS = ['loom', 'llama-server'] as const;
export type SystemName = (typeof SYSTEMS)[number];

export interface PeerRun {
  readonly system: SystemName;
  readonly round: number;
  readonly load: number;
  readonly report: ServeReport;
}

export interface ServePeerResult {
  readonly options: ServePeerOptions & { readonly threads: number };
  readonly llamaServer: { readonly binary: string; readonly commit: string; readonly args: readonly string[] };
  readonly loomArgs: readonly string[];
  readonly runs: PeerRun[];
  readonly warnings: string[];
}

const SERVED_NAME = 'peer-bench';

export async function runServePeer(o: ServePeerOptions, log: (line: string) => void): Promise<ServePeerResult> {
  const threads = o.threads ?? availableParallelism();
  const build = await ensureLlamaServer(log);
  log(`llama-server ${build.built ? 'built' : 'cached'}: ${build.binary}`);
  const warnings: string[] = [];
  const warn = (): void => {
    const w = busyWarning();
    if (w) {
      warnings.push(w);
      log(w);
    }
  };
  warn();
  const loomArgs = ['--served-model-name', SERVED_NAME, '--threads', String(threads), ...o.loomArgs];
  // one slot holds prompt + output and a margin (the prompt re-tokenized may run a few tokens long)
  const slotContext = o.inputLen + o.outputLen + 64;
  const servers: Partial<Record<SystemName, RunningServer>> = {};
  const runs: PeerRun[] = [];
  let llamaArgs: readonly string[] = [];
  try {
    servers.loom = await startLoomServer(o.model, loomArgs, log);
    const llama = await startLlamaServer(build.binary, o.model, { threads, parallel: o.maxConcurrency, slotContext }, log);
    servers['llama-server'] = llama;
    llamaArgs = llama.args;
    for (const rate of o.rates) {
      for (let round = 0; round < o.rounds; round++) {
        // alternate which server goes first, so neither always follows the other
        const order = round % 2 === 0 ? SYSTEMS : ([...SYSTEMS].reverse() as SystemName[]);
        for (const system of order) {
          warn();
          const load = loadAverage();
          log(`${system}: rate ${Number.isFinite(rate) ? rate : 'inf'}, round ${round + 1}/${o.rounds} (load ${load.toFixed(2)})`);
          const report = await runServeBench(benchOptions(servers[system]!.url, o, rate), { log, progressBar: true });
          runs.push({ system, round, load, report });
        }
      }
    }
  } finally {
    await Promise.all(Object.values(servers).map((s) => s?.stop()));
  }
  return { options: { ...o, threads }, llamaServer: { binary: build.binary, commit: build.commit, args: llamaArgs }, loomArgs, runs, warnings };
}

function benchOptions(baseUrl: string, o: ServePeerOptions, requestRate: number): ServeBenchOptions {
  return {
    baseUrl,
    backend: 'openai',
    model: SERVED_NAME,
    tokenizer: o.model,
    datasetName: 'random',
    numPrompts: o.numPrompts,
    randomInputLen: o.inputLen,
    randomOutputLen: o.outputLen,
    randomRangeRatio: 1,
    requestRate,
    maxConcurrency: o.maxConcurrency,
    seed: o.seed,
    warmupRequests: 1,
    stream: true,
    ignoreEos: true,
  };
}

export const SERVE_PEER_DEFAULTS = {
  rounds: 2,
  numPrompts: STANDARD_SCENARIO.numPrompts,
  maxConcurrency: STANDARD_SCENARIO.maxConcurrency,
  inputLen: STANDARD_SCENARIO.randomInputLen,
  outputLen: STANDARD_SCENARIO.randomOutputLen,
} as const;
