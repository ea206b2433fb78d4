// vLLM's "draft_model" method: a small model with the target's vocabulary proposes K tokens
// per sequence by K decode steps of its own, batched across the sequences that draft (one
// draft forward per draft position). It keeps its own paged KV cache (same block size and
// count as the target's, its own BlockManager, no prefix caching: a new sequence's prompt is
// simply recomputed) and, per sequence, how much of that sequence its cache holds.
//
// Per sequence: positions [0, computed) of the draft cache hold seq.tokens' K/V; `fed` are
// the draft tokens fed after them (positions computed..), which verification may or may not
// have accepted. Before each draft the state is synced with seq.tokens (accepted draft tokens
// are kept, the rest rolled back, blocks past them freed); then the draft catches up on the
// tokens it lacks (the prompt, the bonus token: a prefill chunk within maxNumBatchedTokens)
// and decodes K tokens, greedily or (sampled requests) drawn from q, its distribution under
// the request's temperature/top-k/top-p, which is kept for rejection sampling.
import type { Kernels } from '../../kernels/index.js';
import type { KvDtype } from '../../kernels/index.js';
import { createArchitecture } from '../../model/arch/index.js';
import { buildBatch } from '../../model/batch.js';
import type { SequenceChunk } from '../../model/batch.js';
import { KvCache } from '../../model/kv-cache.js';
import { ModelRunner } from '../../model/runner.js';
import type { ModelConfig, TensorSource } from '../../model/weights.js';
import { BlockManager } from '../block-manager.js';
import type { BlockOwner } from '../block-manager.js';
import { Rng } from '../rng.js';
import { RequestSampler } from '../sampler.js';
import { isGreedy } from '../sampling-params.js';
import type { SamplingParams } from '../sampling-params.js';
import type { Sequence } from '../sequence.js';

export interface DraftModel {
  readonly config: ModelConfig;
  readonly tensors: TensorSource;
}

export interface DraftCacheOptions {
  readonly numBlocks: number;
  readonly blockSize: number;
  readonly kvDtype: KvDtype;
  /** the target's served context: the draft never needs positions past it plus K */
  readonly maxModelLen: number;
}

/** a draft: its tokens and, for a sampled request, q ([tokens.length, vocab]) they were drawn from */
export interface Draft {
  readonly tokens: readonly number[];
  readonly probs?: Float32Array;
}

interface DraftState {
  readonly owner: BlockOwner;
  computed: number;
  fed: number[];
  /** processes draft logits as the request's sampler does (q); draws with its own RNG */
  sampler: RequestSampler | undefined;
  rng: Rng | undefined;
  /** this step's draft so far, and for a sampled request q ([k, vocab]) of each token */
  tokens: number[];
  probs: Float32Array | undefined;
  probsBuffer?: Float32Array;
}

/** a sequence to draft for this step: up to k tokens */
export interface DraftJob {
  readonly seq: Sequence;
  readonly k: number;
}

export class DraftModelDrafter {
  readonly runner: ModelRunner;
  readonly blocks: BlockManager;
  /** the longest sequence (tokens) the draft model can extend */
  readonly maxLen: number;
  private readonly states = new Map<Sequence, DraftState>();
  private readonly vocab: number;

  constructor(
    readonly model: DraftModel,
    private readonly kernels: Kernels,
    private readonly opts: DraftCacheOptions,
    /** the sampling parameters of seq's request (undefined once it is gone) */
    private readonly paramsOf: (seq: Sequence) => SamplingParams | undefined,
    private readonly maxSpeculativeTokens: number,
  ) {
    this.maxLen = Math.min(model.config.contextLength, opts.maxModelLen + maxSpeculativeTokens);
    const kv = KvCache.forModel(model.config, opts.numBlocks, opts.blockSize, opts.kvDtype);
    this.runner = new ModelRunner(createArchitecture(model.config, model.tensors, this.maxLen), kv, kernels);
    this.blocks = new BlockManager({ numBlocks: opts.numBlocks, blockSize: opts.blockSize, enablePrefixCaching: false });
    this.vocab = model.config.vocabSize;
  }

  /** bytes of the draft model's KV cache */
  static cacheBytes(config: ModelConfig, numBlocks: number, blockSize: number, dtype: KvDtype): number {
    return KvCache.bytesPerToken(config, dtype) * numBlocks * blockSize;
  }

  /**
   * Drafts for every job (sequences with one token to compute), batched: a catch-up forward
   * over the tokens each lacks, then k − 1 one-token forwards. A catch-up of more than K + 1
   * tokens (a prompt: a prefill) takes from `prefillBudget`, as the target's chunks do; a
   * job whose catch-up does not fit it, whose blocks do not fit, or that would pass the draft
   * model's context, catches up what fits and drafts nothing this step.
   */
  draft(jobs: readonly DraftJob[], prefillBudget: number): void {
    // last step's drafts are gone, verified or not
    for (const state of this.states.values()) {
      state.tokens = [];
      state.probs = undefined;
    }
    let budget = prefillBudget;
    const chunks: SequenceChunk[] = [];
    const drafting: { job: DraftJob; state: DraftState; k: number }[] = [];
    for (const job of jobs) {
      const { seq } = job;
      const state = this.sync(job.seq);
      const length = seq.tokens.length;
      const lacking = length - state.computed;
      const k = Math.min(job.k, this.maxLen - length);
      if (k <= 0) continue; // past the draft model's context: no more drafts for seq
      const prefill = lacking > this.maxSpeculativeTokens + 1;
      const n = prefill ? Math.min(lacking, budget) : lacking;
      const full = n === lacking;
      const cover = state.computed + n + (full ? k - 1 : 0);
      if (n <= 0 || !this.blocks.canAllocate(state.owner, cover)) continue;
      this.blocks.allocate(state.owner, cover);
      chunks.push({ tokenIds: seq.tokens.slice(state.computed, state.computed + n), startPos: state.computed, blockTable: state.owner.blockTable, wantLogits: full });
      state.computed += n;
      if (prefill) budget -= n;
      if (!full) continue;
      const params = this.paramsOf(seq);
      // q rows are read by verification in this step only: one buffer per sequence, reused
      if (params && !isGreedy(params)) state.probs = (state.probsBuffer ??= new Float32Array(this.maxSpeculativeTokens * this.vocab)).subarray(0, k * this.vocab);
      drafting.push({ job, state, k });
    }
    if (chunks.length === 0) return;
    let logits = this.runner.execute(buildBatch(chunks, this.opts.blockSize));
    for (let step = 0; ; step++) {
      // rows in chunk order, one per drafting job still going
      drafting.forEach((d, i) => this.pick(d.job.seq, d.state, logits.subarray(i * this.vocab, (i + 1) * this.vocab)));
      const going = drafting.filter((d) => d.k > step + 1);
      if (going.length === 0) break;
      const next: SequenceChunk[] = going.map(({ state }) => {
        const token = state.tokens[step]!;
        const pos = state.computed + state.fed.length;
        state.fed.push(token);
        return { tokenIds: [token], startPos: pos, blockTable: state.owner.blockTable, wantLogits: true };
      });
      drafting.length = 0;
      drafting.push(...going);
      logits = this.runner.execute(buildBatch(next, this.opts.blockSize));
    }
  }

  /** seq's draft of this step (undefined: none), cut to its first `k` tokens */
  proposal(seq: Sequence, k: number): Draft | undefined {
    const d = this.states.get(seq);
    if (!d || d.tokens.length === 0 || k <= 0) return undefined;
    const n = Math.min(k, d.tokens.length);
    return { tokens: d.tokens.slice(0, n), ...(d.probs && { probs: d.probs.subarray(0, n * this.vocab) }) };
  }

  /** After verification: keeps the draft K/V of accepted tokens, frees the rest. */
  rollback(seq: Sequence): void {
    if (this.states.has(seq)) this.sync(seq);
  }

  /** seq's draft cache is no longer needed (finished, aborted, preempted): every block is freed. */
  release(seq: Sequence): void {
    const state = this.states.get(seq);
    if (!state) return;
    this.blocks.free(state.owner);
    this.states.delete(seq);
  }

  /** sequences holding draft state (for tests) */
  get numSequences(): number {
    return this.states.size;
  }

  /** Appends one draft token chosen from `row` (the draft logits after its last token): the argmax, or drawn from q. */
  private pick(seq: Sequence, state: DraftState, row: Float32Array): void {
    if (!state.probs) {
      state.tokens.push(this.kernels.argmax(row));
      return;
    }
    const params = this.paramsOf(seq)!;
    state.sampler ??= new RequestSampler(params, { vocabSize: this.vocab, kernels: this.kernels });
    // its own stream: the target's sampler draws the verification's numbers
    state.rng ??= new Rng(params.seed !== null ? (params.seed ^ 0x5d2af00d) + seq.index : Math.floor(Math.random() * 2 ** 32));
    const i = state.tokens.length;
    const q = state.probs.subarray(i * this.vocab, (i + 1) * this.vocab);
    state.sampler.distribution(row, q);
    state.tokens.push(drawFrom(q, state.rng.next()));
  }

  /**
   * Brings seq's state in line with seq.tokens: fed draft tokens that seq now has are
   * computed, the others dropped, and at least the last token is left to compute (the next
   * draft needs the logits after it). Blocks past the computed tokens are freed.
   */
  private sync(seq: Sequence): DraftState {
    let state = this.states.get(seq);
    if (!state) {
      state = { owner: { blockTable: [] }, computed: 0, fed: [], sampler: undefined, rng: undefined, tokens: [], probs: undefined };
      this.states.set(seq, state);
    }
    let kept = 0;
    while (kept < state.fed.length && seq.tokens[state.computed + kept] === state.fed[kept]) kept++;
    state.computed = Math.min(state.computed + kept, seq.tokens.length - 1);
    state.fed = [];
    if (state.computed === 0) this.blocks.free(state.owner);
    else this.blocks.truncate(state.owner, state.computed);
    return state;
  }
}

/** a token drawn from probabilities p ([vocab], summing to 1) by the uniform u */
function drawFrom(p: Float32Array, u: number): number {
  let last = 0;
  for (let i = 0; i < p.length; i++) {
    const w = p[i]!;
    if (w <= 0) continue;
    last = i;
    if (u < w) return i;
    u -= w;
  }
  return last;
}
