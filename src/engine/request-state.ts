// One request inside the engine: its parameters, its n sequences and their samplers, the
// stop rules, and the unsent tokens that become the next delta.
import { assertSamplingParams, childSamplingParams } from './sampling-params.js';
import type { SamplingParams } from './sampling-params.js';
import { RequestSampler } from './sampler.js';
import type { SamplingKernels } from './sampler.js';
import { checkLogprobsRequest, promptLogprobs, tokenLogprobs } from './logprobs.js';
import type { LogprobsMode } from './logprobs.js';
import type { AddRequest, FinishReason, RequestDelta } from './protocol.js';
import { Sequence } from './sequence.js';
import type { GrammarCompiler, SequenceGrammar } from './grammar/compiler.js';
import { SequenceGate } from './grammar/gate.js';
import { saltRoot } from './block-manager.js';
import type { SpeculativeConfig } from './spec/config.js';
import { verifyDraft } from './spec/verify.js';
import { modelTokenId, spansOf, withImageKeys } from './image-spans.js';

export interface StopConfig {
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  readonly logprobsMode: LogprobsMode;
  /** the kernels sampling runs on (default: the reference kernels) */
  readonly samplingKernels?: SamplingKernels;
  /** compiles request grammars for this engine's tokenizer (absent: grammars are refused) */
  readonly grammars?: GrammarCompiler | undefined;
  /** speculative decoding, when the engine runs it */
  readonly speculative?: SpeculativeConfig | undefined;
}

export class RequestState {
  readonly params: SamplingParams;
  readonly sequences: Sequence[];
  /**
   * completions that fork from the first at its first sample (sharing its prompt blocks):
   * n, or --max-num-seqs when n is larger; the rest start as sequences of their own, waiting
   * their turn (vLLM schedules an n > max_num_seqs request's sequences as capacity allows)
   */
  readonly forks: number;
  /** the completions beyond `forks`, queued from the start (their own prefill; the prefix cache shares it) */
  readonly queued: Sequence[] = [];
  private readonly samplers = new Map<Sequence, RequestSampler>();
  private readonly stopIds: ReadonlySet<number>;
  /** per sequence: its grammar state and its next-token mask (requests with a grammar only) */
  private readonly grammars = new Map<Sequence, SequenceGrammar>();
  private readonly masks = new Map<Sequence, Int32Array>();
  /** per sequence: where it stands to its reasoning, when the grammar waits for it to end */
  private readonly gates = new Map<Sequence, SequenceGate>();

  constructor(
    req: AddRequest,
    private readonly vocabSize: number,
    private readonly config: StopConfig,
    maxNumSeqs = Infinity,
  ) {
    // resolved once, by the frontend (pipeline/request.ts): here only asserted
    this.params = assertSamplingParams(req.params, vocabSize);
    checkLogprobsRequest(config.logprobsMode, this.params);
    const spans = spansOf(req.images ?? []);
    const prompt = spans.length > 0 ? withImageKeys(req.promptIds, spans) : req.promptIds;
    const first = new Sequence(req.id, 0, prompt, req.arrivalTime, spans);
    first.noPrefixCache = this.params.promptLogprobs !== null;
    first.prefixRoot = saltRoot(this.params.cacheSalt ?? undefined);
    this.sequences = [first];
    if (this.params.grammar) {
      if (!config.grammars) throw new Error('constrained decoding is unavailable: this engine has no grammar compiler');
      this.grammars.set(first, config.grammars.matcher(this.params.grammar));
      this.gateFor(first);
    }
    this.samplers.set(first, this.samplerFor(0, req.promptIds));
    // a draft never runs over images (a draft model reads tokens only)
    first.draftLimit = this.speculates() && spans.length === 0 ? Math.min(config.maxModelLen, first.promptLength + (this.params.maxTokens ?? Infinity)) : 0;
    this.stopIds = new Set([...this.params.stopTokenIds, ...(this.params.ignoreEos ? [] : config.eosTokenIds)]);
    this.forks = Math.min(this.params.n, maxNumSeqs);
    first.slots = this.forks;
    for (let i = this.forks; i < this.params.n; i++) {
      const seq = new Sequence(req.id, i, prompt, req.arrivalTime, spans);
      seq.prefixRoot = first.prefixRoot;
      seq.draftLimit = first.draftLimit;
      if (this.params.grammar) {
        this.grammars.set(seq, config.grammars!.matcher(this.params.grammar));
        this.gateFor(seq);
      }
      this.samplers.set(seq, this.samplerFor(i, req.promptIds));
      this.sequences.push(seq);
      this.queued.push(seq);
    }
  }

  /**
   * Samples seq's next token from its logits row. The first sample of an n > 1 request
   * also starts the other completions from the same row: they are returned, to be forked
   * from seq (sharing its blocks) and run.
   */
  sample(seq: Sequence, logits: Float32Array, time: number): Sequence[] {
    const children: Sequence[] = [];
    if (seq.index === 0 && seq.numOutput === 0) {
      for (let i = 1; i < this.forks; i++) {
        const child = new Sequence(seq.requestId, i, seq.tokens, seq.arrivalTime, seq.images);
        child.numComputed = seq.numComputed;
        child.numCachedPrompt = seq.numCachedPrompt;
        child.firstScheduledTime = seq.firstScheduledTime;
        child.prefixRoot = seq.prefixRoot;
        child.draftLimit = seq.draftLimit;
        this.samplers.set(child, this.samplerFor(i, seq.tokens));
        if (this.params.grammar) {
          // a fresh matcher at the start, as seq's was when its mask was made: the mask is shared
          this.grammars.set(child, this.config.grammars!.matcher(this.params.grammar));
          this.gateFor(child);
          const mask = this.masks.get(seq);
          if (mask) this.masks.set(child, mask);
        }
        this.sequences.push(child);
        children.push(child);
      }
    }
    for (const s of [seq, ...children]) this.sampleOne(s, logits, time);
    return children;
  }

  private samplerFor(index: number, promptIds: ArrayLike<number>): RequestSampler {
    return new RequestSampler(childSamplingParams(this.params, index), {
      promptIds: Array.from(promptIds, modelTokenId),
      eosTokenIds: this.config.eosTokenIds,
      vocabSize: this.vocabSize,
      ...(this.config.samplingKernels && { kernels: this.config.samplingKernels }),
    });
  }

  /**
   * Whether this request's sequences may draft: not under a grammar (its matcher cannot be
   * rolled back), nor with penalties, min_tokens or bad_words, which change each position's
   * logits by the tokens before it (the verify rows would need per-position state).
   */
  private speculates(): boolean {
    const p = this.params;
    return this.config.speculative !== undefined && !p.grammar && p.repetitionPenalty === 1 && p.frequencyPenalty === 0 && p.presencePenalty === 0 && p.minTokens === 0 && p.badWords.length === 0;
  }

  /**
   * Verifies seq's draft against rows ([draft.length + 1, vocab], the target's logits at each
   * draft position): samples and emits tokens position by position until one differs from the
   * draft or ends seq (spec/verify.ts). `q` ([draft.length, vocab]): the probabilities a
   * sampled draft was drawn from (rejection sampling against them); absent: a point-mass
   * draft. Returns the number of draft tokens accepted.
   */
  sampleDraft(seq: Sequence, rows: Float32Array, draft: readonly number[], time: number, tap?: (row: Float32Array) => void, q?: Float32Array): number {
    const v = this.vocabSize;
    return verifyDraft(draft, (i) => {
      const row = rows.subarray(i * v, (i + 1) * v);
      tap?.(row);
      this.sampleOne(seq, row, time, q && i < draft.length ? { token: draft[i]!, q: q.subarray(i * v, (i + 1) * v) } : undefined);
      return { token: seq.tokens[seq.tokens.length - 1]!, finished: this.finishReason(seq) !== undefined };
    });
  }

  private gateFor(seq: Sequence): void {
    if (this.params.grammarGate) this.gates.set(seq, new SequenceGate(this.params.grammarGate));
  }

  /** whether seq's sampling is constrained by a grammar */
  hasGrammar(seq: Sequence): boolean {
    return this.grammars.has(seq);
  }

  /** Computes seq's allowed-token mask for its next sample (call before the step's forward pass). */
  prepareMask(seq: Sequence): void {
    const grammar = this.grammars.get(seq);
    const gate = this.gates.get(seq);
    if (!grammar || grammar.isTerminated || (gate && !gate.constrains)) return;
    let mask = this.masks.get(seq);
    if (!mask || mask.length !== this.config.grammars!.maskWords || this.isShared(seq, mask)) {
      mask = new Int32Array(this.config.grammars!.maskWords);
      this.masks.set(seq, mask);
    }
    grammar.fillMask(mask);
    gate?.widen(mask);
  }

  /** Frees the grammar matchers (when the request is forgotten). */
  release(): void {
    for (const g of this.grammars.values()) g.close();
    this.grammars.clear();
    this.masks.clear();
    this.gates.clear();
  }

  private isShared(seq: Sequence, mask: Int32Array): boolean {
    for (const [other, m] of this.masks) if (other !== seq && m === mask) return true;
    return false;
  }

  /** `draft`: the draft token at this position and the q it was drawn from (rejection sampling) */
  private sampleOne(seq: Sequence, logits: Float32Array, time: number, draft?: { token: number; q: Float32Array }): void {
    const sampler = this.samplers.get(seq)!;
    const wantLogprobs = this.params.logprobs !== null;
    const grammar = this.grammars.get(seq);
    const gate = this.gates.get(seq);
    const constrained = grammar !== undefined && (!gate || gate.constrains);
    const token = draft ? sampler.sampleAgainstDraft(logits, draft.token, draft.q) : sampler.sample(logits, constrained ? this.masks.get(seq) : undefined);
    // a token of the reasoning (or the start token that opens it) is not the grammar's
    if (grammar && (!gate || gate.observe(token)) && !grammar.accept(token)) this.grammarBroken.add(seq);
    seq.tokens.push(token);
    seq.pending.times.push(time);
    seq.pending.tokens.push(token);
    if (wantLogprobs) {
      const lp = tokenLogprobs(this.config.logprobsMode, logits, sampler.lastProcessedLogits(), token, this.params.logprobs ?? 0);
      seq.pending.logprobs.push(lp.logprob);
      seq.pending.topIds.push(...lp.topIds);
      seq.pending.topLogprobs.push(...lp.topLogprobs);
    }
  }

  /** prompt logprobs so far: [count] values and [count, topN] alternatives */
  private readonly prompt = { logprobs: [] as number[], ranks: [] as number[], topIds: [] as number[], topLogprobs: [] as number[] };

  /** whether seq's next prefill chunk must return logits at every position */
  wantsPromptLogprobs(seq: Sequence): boolean {
    return seq.index === 0 && this.params.promptLogprobs !== null && this.prompt.logprobs.length < seq.promptLength - 1;
  }

  /** Records the logprobs of prompt tokens from,… given the logits rows [k, vocab] at positions from.. */
  addPromptLogprobs(seq: Sequence, rows: Float32Array, from: number): void {
    const vocab = this.vocabSize;
    const have = this.prompt.logprobs.length; // positions already recorded (a recompute repeats them)
    const first = Math.max(from, have);
    const last = Math.min(from + rows.length / vocab, seq.promptLength - 1); // position p scores token p + 1
    if (last <= first) return;
    const cols = promptLogprobs(
      this.config.logprobsMode,
      rows.subarray((first - from) * vocab, (last - from) * vocab),
      vocab,
      seq.tokens.slice(first + 1, last + 1),
      this.params.promptLogprobs ?? 0,
    );
    this.prompt.logprobs.push(...cols.logprobs);
    this.prompt.ranks.push(...cols.ranks);
    this.prompt.topIds.push(...cols.topIds);
    this.prompt.topLogprobs.push(...cols.topLogprobs);
  }

  /** sequences whose sampled token the grammar refused (an engine bug, not the user's): they end */
  private readonly grammarBroken = new Set<Sequence>();

  /** Why seq should stop after its latest token, if it should. */
  finishReason(seq: Sequence): { reason: FinishReason; stopTokenId?: number } | undefined {
    const last = seq.tokens[seq.tokens.length - 1]!;
    if (this.grammarBroken.has(seq)) return { reason: 'abort' };
    // the grammar accepted a stop token: complete (even with ignore_eos, the grammar allows nothing more)
    if (this.grammars.get(seq)?.isTerminated) return { reason: 'stop', stopTokenId: last };
    if (this.stopIds.has(last) && seq.numOutput > this.params.minTokens - 1) return { reason: 'stop', stopTokenId: last };
    if (this.params.maxTokens !== null && seq.numOutput >= this.params.maxTokens) return { reason: 'length' };
    if (seq.tokens.length >= this.config.maxModelLen) return { reason: 'length' };
    return undefined;
  }

  /** The unsent part of seq as a delta (undefined when there is nothing to say). A stop token is not sent as text. */
  takeDelta(seq: Sequence): RequestDelta | undefined {
    const p = seq.pending;
    let count = p.tokens.length;
    if (seq.finishReason === 'stop' && seq.stopTokenId !== undefined && count > 0 && p.tokens[count - 1] === seq.stopTokenId) count--;
    if (count === 0 && !seq.finishReason && seq.announced) return undefined;
    const topN = this.params.logprobs ?? 0;
    const delta: RequestDelta = {
      id: seq.requestId,
      index: seq.index,
      tokenIds: Int32Array.from(p.tokens.slice(0, count)),
      times: Float64Array.from(p.times.slice(0, count)),
      ...(this.params.logprobs !== null && {
        logprobs: Float32Array.from(p.logprobs.slice(0, count)),
        topIds: Int32Array.from(p.topIds.slice(0, count * topN)),
        topLogprobs: Float32Array.from(p.topLogprobs.slice(0, count * topN)),
      }),
      ...(seq.finishReason && { finishReason: seq.finishReason }),
      ...(seq.stopTokenId !== undefined && { stopTokenId: seq.stopTokenId }),
      ...(!seq.announced && { cachedPromptTokens: seq.numCachedPrompt, newlyCachedPromptTokens: seq.numNewlyCachedPrompt, firstScheduledTime: seq.firstScheduledTime ?? 0 }),
      ...(!seq.announced &&
        seq.index === 0 &&
        this.params.promptLogprobs !== null && {
          promptLogprobs: Float32Array.from(this.prompt.logprobs),
          promptRanks: Int32Array.from(this.prompt.ranks),
          promptTopIds: Int32Array.from(this.prompt.topIds),
          promptTopLogprobs: Float32Array.from(this.prompt.topLogprobs),
        }),
    };
    seq.announced = true;
    p.tokens.length = p.times.length = p.logprobs.length = p.topIds.length = p.topLogprobs.length = 0;
    return delta;
  }

  /**
   * Completions never forked because the first ended before its first token (abort, no
   * room): they end with it, so the frontend hears of all n. (The queued ones run on.)
   */
  endUnstarted(reason: FinishReason): Sequence[] {
    const ended: Sequence[] = [];
    const first = this.sequences[0]!;
    if (first.finishReason === undefined || this.sequences.some((s) => s.index > 0 && s.index < this.forks)) return ended;
    for (let i = 1; i < this.forks; i++) {
      const seq = new Sequence(first.requestId, i, first.tokens.slice(0, first.promptLength), first.arrivalTime, first.images);
      seq.status = 'finished';
      seq.finishReason = reason;
      this.sequences.push(seq);
      ended.push(seq);
    }
    return ended;
  }

  allFinished(): boolean {
    return this.sequences.length === this.params.n && this.sequences.every((s) => s.status === 'finished');
  }
}
