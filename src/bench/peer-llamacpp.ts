// llama.cpp's side of `loom bench peer`, through node-llama-cpp (installed into oracle/ only
// for this command and loaded from there by path, typed structurally: no dependency of loom).
// CPU only, f16 KV cache, flash attention off unless asked (--llama-flash-attention), the
// thread count given explicitly (to the Llama instance and to every context, ideal = min = N).
// A long context is prefilled in batches of LONG_CONTEXT_BATCH tokens (node-llama-cpp makes
// n_ubatch = n_batch: one batch of the whole prompt would need a score matrix of prompt ×
// context floats a head without flash attention).
//
// How the batched case is driven, llama.cpp's best way: one context with `sequences: N`, one
// LlamaContextSequence per prompt; each step calls controlledEvaluate([[lastToken, {generateNext:
// {token: true}}]]) on every sequence in the same tick and awaits them together. node-llama-cpp
// queues the N evaluations and, once all N sequences have queued (or at the next macrotask),
// dispatches them as ONE llama_decode batch of N tokens, then samples each sequence (greedy).
// The bench counts the native decodeBatch calls in the window to prove one call per step.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PeerSide, TimedTokens } from './peer-types.js';
import type { LoadOptions } from '../model/load.js';

/** The slice of node-llama-cpp 3.22's API used here. */
interface NextOutput {
  readonly next?: { readonly token?: number | null };
}
type EvalItem = number | [number, { generateNext?: { token?: boolean; options?: { temperature?: number } } }];
interface LlamaSequence {
  clearHistory(): Promise<void>;
  controlledEvaluate(input: EvalItem[]): Promise<Array<NextOutput | undefined>>;
  dispose(): void;
}
interface NativeContext {
  decodeBatch(): Promise<void>;
}
interface LlamaContext {
  getSequence(): LlamaSequence;
  dispose(): Promise<void>;
  /** node-llama-cpp's native context (private; wrapped to count and time llama_decode calls) */
  _ctx?: NativeContext;
}
interface LlamaModel {
  createContext(opts: object): Promise<LlamaContext>;
  dispose(): Promise<void>;
}
interface Llama {
  loadModel(opts: object): Promise<LlamaModel>;
  dispose(): Promise<void>;
}
interface NodeLlamaCpp {
  getLlama(opts: object): Promise<Llama>;
}

export const NODE_LLAMA_CPP_VERSION = '3.22.1';
/** llama.cpp's default n_ubatch (llama-server, llama-bench) */
export const LONG_CONTEXT_BATCH = 512;

export const llamaCppSettings = (flashAttention: boolean): string =>
  `node-llama-cpp 3.22.1, CPU (gpu: false), f16 KV cache, flashAttention: ${flashAttention}, batchSize ≥ prompt and ≥ sequences (long contexts: ${LONG_CONTEXT_BATCH})`;

export async function importNodeLlamaCpp(projectRoot: string): Promise<NodeLlamaCpp> {
  const entry = join(projectRoot, 'oracle', 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
  try {
    return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
  } catch (err) {
    throw new Error(`cannot load node-llama-cpp from oracle/ (run \`npm --prefix oracle install\`): ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Counts and times the native decode calls of a context (node-llama-cpp's private _ctx). */
class DecodeMeter {
  calls = 0;
  ms = 0;
  readonly available: boolean;

  constructor(ctx: LlamaContext) {
    const native = ctx._ctx;
    this.available = native !== undefined && typeof native.decodeBatch === 'function';
    if (!native || !this.available) return;
    const decode = native.decodeBatch.bind(native);
    // a non-writable method of the native class: shadow it on the instance
    Object.defineProperty(native, 'decodeBatch', {
      configurable: true,
      value: async (): Promise<void> => {
        const t0 = performance.now();
        await decode();
        this.ms += performance.now() - t0;
        this.calls++;
      },
    });
  }

  reset(): void {
    this.calls = 0;
    this.ms = 0;
  }
}

const greedy = (token: number): EvalItem => [token, { generateNext: { token: true, options: { temperature: 0 } } }];

function tokenOf(out: Array<NextOutput | undefined>): number {
  const t = out.at(-1)?.next?.token;
  if (t === undefined || t === null) throw new Error('llama.cpp returned no token');
  return t;
}

/** [...prompt without its last id, last id asking for the next token] */
const promptInput = (prompt: Int32Array): EvalItem[] => [...Array.from(prompt.subarray(0, -1)), greedy(prompt[prompt.length - 1]!)];

export class LlamaCppSide implements PeerSide {
  readonly name = 'llama.cpp';

  private constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly threads: number,
    private readonly flashAttention: boolean,
  ) {}

  static async open(nlc: NodeLlamaCpp, path: string, threads: number, load: LoadOptions = {}, flashAttention = false): Promise<LlamaCppSide> {
    const llama = await nlc.getLlama({ gpu: false, build: 'never', logLevel: 'error', maxThreads: threads });
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: load.mmap !== false, useMlock: load.mlock === true });
    return new LlamaCppSide(llama, model, threads, flashAttention);
  }

  private context(sequences: number, contextSize: number, batchSize: number): Promise<LlamaContext> {
    return this.model.createContext({
      sequences,
      contextSize,
      batchSize: Math.max(batchSize, sequences),
      threads: { ideal: this.threads, min: this.threads },
      flashAttention: this.flashAttention,
    });
  }

  /** one context kept for the prefill runs (emptied before each), so only the first run pays its setup */
  private prefillContext: { ctx: LlamaContext; seq: LlamaSequence; size: number } | undefined;

  async prefill(prompt: Int32Array): Promise<number> {
    if (!this.prefillContext || this.prefillContext.size < prompt.length) {
      await this.prefillContext?.ctx.dispose();
      const ctx = await this.context(1, prompt.length + 16, prompt.length);
      this.prefillContext = { ctx, seq: ctx.getSequence(), size: prompt.length };
    }
    const { seq } = this.prefillContext;
    await seq.clearHistory();
    const t0 = performance.now();
    tokenOf(await seq.controlledEvaluate(promptInput(prompt)));
    return performance.now() - t0;
  }

  async decode(prompt: Int32Array, warmup: number, tokens: number): Promise<TimedTokens> {
    return this.batched([prompt], warmup, tokens);
  }

  async longContext(prompt: Int32Array, warmup: number, tokens: number): Promise<{ prefill: TimedTokens; decode: TimedTokens }> {
    const ctx = await this.context(1, prompt.length + warmup + tokens + 16, Math.min(prompt.length, LONG_CONTEXT_BATCH));
    const meter = new DecodeMeter(ctx);
    try {
      const seq = ctx.getSequence();
      const t0 = performance.now();
      let last = tokenOf(await seq.controlledEvaluate(promptInput(prompt)));
      const prefill = { tokens: prompt.length, ms: performance.now() - t0, calls: meter.calls };
      for (let i = 0; i < warmup; i++) last = tokenOf(await seq.controlledEvaluate([greedy(last)]));
      meter.reset();
      const t1 = performance.now();
      for (let i = 0; i < tokens; i++) last = tokenOf(await seq.controlledEvaluate([greedy(last)]));
      const ms = performance.now() - t1;
      return {
        prefill,
        decode: {
          tokens, ms, calls: meter.available ? meter.calls : tokens,
          ...(meter.available && { profile: { 'llama_decode': meter.ms / ms, 'outside llama_decode': Math.max(0, ms - meter.ms) / ms } }),
        },
      };
    } finally {
      await ctx.dispose();
    }
  }

  async batched(prompts: readonly Int32Array[], warmup: number, steps: number): Promise<TimedTokens> {
    const longest = Math.max(...prompts.map((p) => p.length));
    const total = prompts.reduce((n, p) => n + p.length, 0);
    const ctx = await this.context(prompts.length, longest + warmup + steps + 16, Math.min(total, 2048));
    const meter = new DecodeMeter(ctx);
    try {
      const seqs = prompts.map(() => ctx.getSequence());
      // prefill every prompt (batched by node-llama-cpp too), then warm up
      let last = await Promise.all(seqs.map(async (s, i) => tokenOf(await s.controlledEvaluate(promptInput(prompts[i]!)))));
      const step = async (): Promise<number[]> => Promise.all(seqs.map(async (s, i) => tokenOf(await s.controlledEvaluate([greedy(last[i]!)]))));
      for (let i = 0; i < warmup; i++) last = await step();
      meter.reset();
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) last = await step();
      const ms = performance.now() - t0;
      const calls = meter.available ? meter.calls : steps;
      return {
        tokens: steps * prompts.length,
        ms,
        calls,
        ...(meter.available && { profile: { 'llama_decode': meter.ms / ms, 'outside llama_decode': Math.max(0, ms - meter.ms) / ms } }),
      };
    } finally {
      await ctx.dispose();
    }
  }

  async close(): Promise<void> {
    await this.prefillContext?.ctx.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }
}
