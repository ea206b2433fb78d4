// loom's side of `loom bench peer`: an EngineCore driven step by step on this thread (the
// engine itself, no worker messaging, no HTTP), with the native kernels, the prefix cache off
// (so repeated prompts are computed again) and every kernel call timed for the profile.
import type { Kernels } from '../kernels/index.js';
import { selectKernels } from '../kernels/select.js';
import { EngineCore, now } from '../engine/engine.js';
import { resolveEngineConfig } from '../engine/options.js';
import { KvCache } from '../model/kv-cache.js';
import type { LoadedModel } from '../model/load.js';
import type { ExpertUse, PeerSide, Profile, TimedTokens } from './peer-types.js';
import { resolveSamplingParams } from '../engine/sampling-params.js';

function matmulBucket(weight: string): string {
  if (weight === 'output.weight' || weight === 'token_embd.weight') return 'lm_head';
  // one expert's view of a 3-D expert tensor: blk.N.ffn_gate_exps.weight[e]
  if (weight.includes('_exps.')) return 'matmul experts';
  return weight.includes('ffn_') ? 'matmul ffn' : 'matmul attn';
}

/** The routed experts' counters of an MoE model (tokens routed to each expert, per MoE layer). */
interface ExpertCounters {
  readonly expertLoad?: readonly Float64Array[];
}

/** Counts, over the measured steps, the experts each MoE layer ran and the (token, expert) pairs it routed. */
class ExpertTally {
  private before: Float64Array[] = [];
  distinct = 0;
  pairs = 0;
  layerSteps = 0;

  constructor(private readonly counters: ExpertCounters) {}

  snapshot(): void {
    this.before = (this.counters.expertLoad ?? []).map((l) => l.slice());
  }

  /** adds the step since snapshot() */
  add(): void {
    (this.counters.expertLoad ?? []).forEach((load, li) => {
      const was = this.before[li]!;
      for (let e = 0; e < load.length; e++) {
        const d = load[e]! - was[e]!;
        if (d > 0) this.distinct++;
        this.pairs += d;
      }
      this.layerSteps++;
    });
  }

  use(experts: number): ExpertUse | undefined {
    if (this.layerSteps === 0) return undefined;
    return { experts, distinctPerLayerStep: this.distinct / this.layerSteps, pairsPerLayerStep: this.pairs / this.layerSteps };
  }
}

/** Kernel time by bucket (ms) while `on`; the wrapper adds about 0.1 µs per call. */
class KernelClock {
  readonly ms = new Map<string, number>();
  on = false;

  wrap(k: Kernels): Kernels {
    const timed = <A extends unknown[], R>(fn: (...args: A) => R, bucket: string | ((...args: A) => string)) => (...args: A): R => {
      if (!this.on) return fn(...args);
      const t0 = performance.now();
      const r = fn(...args);
      const b = typeof bucket === 'string' ? bucket : bucket(...args);
      this.ms.set(b, (this.ms.get(b) ?? 0) + performance.now() - t0);
      return r;
    };
    return {
      name: k.name,
      matmul: timed(k.matmul, (_o, _x, w) => matmulBucket(w.name)),
      matmulSet: timed(k.matmulSet, (_x, _rows, targets) => matmulBucket(targets[0]!.w.name)),
      // the routed experts' whole FFN (matmuls, biases, activation, weighted sum) is one kernel
      moeExperts: timed(k.moeExperts, 'matmul experts'),
      embedRows: timed(k.embedRows, 'other kernels'),
      rmsNorm: timed(k.rmsNorm, 'other kernels'),
      layerNorm: timed(k.layerNorm, 'other kernels'),
      convSilu: timed(k.convSilu, 'recurrence'),
      gatedDeltaRule: timed(k.gatedDeltaRule, 'recurrence'),
      rope: timed(k.rope, 'other kernels'),
      ropeMulti: timed(k.ropeMulti, 'other kernels'),
      siluMul: timed(k.siluMul, 'other kernels'),
      gelu: timed(k.gelu, 'other kernels'),
      geluMul: timed(k.geluMul, 'other kernels'),
      softcap: timed(k.softcap, 'other kernels'),
      add: timed(k.add, 'other kernels'),
      addBias: timed(k.addBias, 'other kernels'),
      softmax: timed(k.softmax, 'other kernels'),
      argmax: timed(k.argmax, 'sampling'),
      applyTokenMask: timed(k.applyTokenMask, 'sampling'),
      expWeights: timed(k.expWeights, 'sampling'),
      sampleCandidates: timed(k.sampleCandidates, 'sampling'),
      drawIndex: timed(k.drawIndex, 'sampling'),
      writeKv: timed(k.writeKv, 'attention'),
      attention: timed(k.attention, 'attention'),
    };
  }
}

/** shares of `totalMs`; what no kernel took is 'outside kernels' (batching, sampling, scheduling in JS) */
function profile(kernelMs: ReadonlyMap<string, number>, totalMs: number): Profile {
  const out: Record<string, number> = {};
  let kernels = 0;
  for (const [b, ms] of [...kernelMs].sort()) {
    out[b] = ms / totalMs;
    kernels += ms;
  }
  out['outside kernels'] = Math.max(0, totalMs - kernels) / totalMs;
  return out;
}

interface StepRecord {
  readonly ms: number;
  readonly scheduledTokens: number;
  readonly numRunning: number;
  readonly newTokens: number;
}

export class LoomSide implements PeerSide {
  readonly name = 'loom';
  private readonly engine: EngineCore;
  private readonly clock = new KernelClock();
  private nextId = 0;
  private readonly moe: LoadedModel['config']['moe'];

  constructor(model: LoadedModel, threads: number, maxSequences: number, maxTokensPerSeq: number) {
    this.moe = model.config.moe;
    const config = resolveEngineConfig(
      {
        model: model.path,
        backend: 'native',
        threads,
        enablePrefixCaching: false,
        maxNumSeqs: Math.max(maxSequences, 1),
        maxModelLen: Math.min(model.config.contextLength, maxTokensPerSeq),
        // 4 GiB, or what one sequence of the longest context needs with room to spare (a 32k context of a 4B model takes more)
        kvCacheMemory: Math.max(4 * 2 ** 30, Math.ceil(1.25 * maxTokensPerSeq * KvCache.bytesPerToken(model.config, 'f16'))),
      },
      model.config,
      [...model.tokenizer.stopIds],
    );
    this.engine = new EngineCore(model, this.clock.wrap(selectKernels('native', threads)), config);
  }

  /** Submits the prompts and steps the engine until all are done; the steps `measure` picks form the window. */
  private run(prompts: readonly Int32Array[], maxTokens: number, measure: (s: StepRecord, index: number) => boolean): { steps: StepRecord[]; window: TimedTokens } {
    for (const promptIds of prompts) {
      const refused = this.engine.add({ type: 'add', id: `peer-${this.nextId++}`, promptIds, params: resolveSamplingParams({ temperature: 0, ignoreEos: true, maxTokens }), arrivalTime: now() });
      if (refused?.error) throw new Error(`loom refused a benchmark request: ${refused.error}`);
    }
    const steps: StepRecord[] = [];
    const kernelMs = new Map<string, number>();
    let tokens = 0, ms = 0, calls = 0;
    const tally = new ExpertTally(this.engine.runner.arch as ExpertCounters);
    this.clock.on = true;
    try {
      while (this.engine.hasWork) {
        const numRunning = this.engine.scheduler.numRunning;
        this.clock.ms.clear();
        tally.snapshot();
        const t0 = performance.now();
        const out = this.engine.step();
        const stepMs = performance.now() - t0;
        const rec: StepRecord = {
          ms: stepMs,
          scheduledTokens: out?.stats.scheduledTokens ?? 0,
          numRunning,
          newTokens: out ? out.deltas.reduce((n, d) => n + d.tokenIds.length, 0) : 0,
        };
        if (measure(rec, steps.length)) {
          tokens += rec.newTokens;
          ms += stepMs;
          calls++;
          for (const [b, v] of this.clock.ms) kernelMs.set(b, (kernelMs.get(b) ?? 0) + v);
          tally.add();
        }
        steps.push(rec);
      }
    } finally {
      this.clock.on = false;
    }
    const experts = this.moe;
    const use = experts && tally.use(experts.numExperts);
    return { steps, window: { tokens, ms, calls, profile: profile(kernelMs, ms), ...(use && { experts: use }) } };
  }

  prefill(prompt: Int32Array): Promise<number> {
    const { steps } = this.run([prompt], 1, () => false);
    return Promise.resolve(steps.reduce((n, s) => n + s.ms, 0));
  }

  decode(prompt: Int32Array, warmup: number, tokens: number): Promise<TimedTokens> {
    return this.longContext(prompt, warmup, tokens).then((r) => r.decode);
  }

  longContext(prompt: Int32Array, warmup: number, tokens: number): Promise<{ prefill: TimedTokens; decode: TimedTokens }> {
    // the prompt's steps (chunks of --max-num-batched-tokens; the last samples the first token),
    // then `warmup` decode steps, then the measured ones
    let decodes = 0;
    const { steps, window } = this.run([prompt], 1 + warmup + tokens, (s) => s.scheduledTokens === 1 && ++decodes > warmup);
    // the prompt's chunks, up to the step that sampled its first token
    const first = steps.findIndex((s) => s.newTokens > 0);
    const prefill = steps.slice(0, first + 1);
    return Promise.resolve({ prefill: { tokens: prompt.length, ms: prefill.reduce((n, s) => n + s.ms, 0), calls: prefill.length }, decode: window });
  }

  batched(prompts: readonly Int32Array[], warmup: number, steps: number): Promise<TimedTokens> {
    const n = prompts.length;
    let steady = 0;
    // steady: every sequence running and decoding one token (all prompts prefilled)
    const { window } = this.run(prompts, 1 + warmup + steps, (s) => {
      if (s.numRunning !== n || s.scheduledTokens !== n) return false;
      steady++;
      return steady > warmup && steady <= warmup + steps;
    });
    return Promise.resolve(window);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
