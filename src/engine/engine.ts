// The engine core: step() = schedule → run the model → sample → report what is new.
// Finishing and aborting are events (Scheduler.finish); nothing scans live requests.
import { performance } from 'node:perf_hooks';
import type { Kernels } from '../kernels/index.js';
import { createArchitecture } from '../model/arch/index.js';
import { buildBatch } from '../model/batch.js';
import type { SequenceChunk } from '../model/batch.js';
import { KvCache } from '../model/kv-cache.js';
import type { KvDtype } from '../kernels/index.js';
import { ModelRunner } from '../model/runner.js';
import { Pooler } from '../model/pooling.js';
import { PoolingRequests } from './pooling-requests.js';
import type { ModelConfig, TensorSource } from '../model/weights.js';
import { BlockManager } from './block-manager.js';
import { KvEventRecorder } from './kv-events.js';
import type { AddRequest, RequestDelta, StepOutput, StepStats } from './protocol.js';
import type { SamplingKernels } from './sampler.js';
import { Scheduler } from './scheduler.js';
import { SwaBlocks } from './swa-blocks.js';
import { StateSlots } from './state-slots.js';
import { StateCheckpoints } from './state-checkpoints.js';
import { CheckpointPolicy } from './checkpoint-policy.js';
import { WindowCheckpoints } from './window-checkpoints.js';
import type { SchedulerConfig, ScheduledChunk } from './scheduler.js';
import { Sequence } from './sequence.js';
import { DiskPrefixCache } from './disk-prefix-cache.js';
import type { KvCacheDirConfig } from './disk-prefix-cache.js';
import { RequestState } from './request-state.js';
import type { LogprobsMode } from './logprobs.js';
import { GrammarCompiler } from './grammar/compiler.js';
import type { GrammarVocab } from './grammar/compiler.js';
import { xgrammarIfLoaded } from './grammar/xgrammar-binding.js';
import type { SpeculativeConfig } from './spec/config.js';
import { Speculator } from './spec/speculator.js';
import { DraftModelDrafter } from './spec/draft-model-drafter.js';
import type { DraftModel } from './spec/draft-model-drafter.js';
import type { VisionProjector } from '../model/vision/projector.js';
import { ImageEncoder, NO_IMAGES } from './image-encoder.js';
import type { StepEmbeddings } from './image-encoder.js';
import { checkEngineImages, modelTokenId } from './image-spans.js';
import { mropePositions } from './mrope-positions.js';

export interface EngineConfig extends SchedulerConfig {
  readonly numBlocks: number;
  /** checkpoints for prefix caching of a hybrid model (recurrent state, engine/state-checkpoints.ts) or a
   *  sliding-window pool (windows, engine/window-checkpoints.ts): how many (0 or absent: none, and prefix
   *  caching must be off for such a model) */
  readonly stateCheckpoints?: number;
  /** blocks of the sliding-window layers' own pool (0: those layers use the global blocks) */
  readonly swaBlocks?: number;
  readonly blockSize: number;
  readonly kvDtype: KvDtype;
  readonly logprobsMode: LogprobsMode;
  /** the model's end-of-generation ids (tokenizer stop ids) */
  readonly eosTokenIds: readonly number[];
  /** report prefix-cache changes as KV events, block hashes rooted at this seed */
  readonly kvEvents?: { readonly hashSeed: string };
  /** speculative decoding (prompt lookup or a draft model), when on */
  readonly speculative?: SpeculativeConfig;
  /** prefix blocks kept on disk across restarts (--kv-cache-dir); models whose prefix caching needs checkpoints get none */
  readonly kvCacheDir?: KvCacheDirConfig;
  /** set when the context was lowered to fit the KV cache (no --max-model-len given): the start-up line saying so */
  readonly contextNote?: string;
}

export const now = (): number => performance.timeOrigin + performance.now();

export class EngineCore {
  readonly runner: ModelRunner;
  readonly blocks: BlockManager;
  /** the sliding-window layers' pool (models with sliding-window layers and config.swaBlocks > 0) */
  readonly swaBlocks: SwaBlocks | undefined;
  /** recurrent-state slots (hybrid models), one per running sequence */
  readonly states: StateSlots | undefined;
  /** a hybrid model's state checkpoints (when it caches prefixes) */
  readonly checkpoints: StateCheckpoints | undefined;
  /** a sliding-window pool's window checkpoints (when it caches prefixes) */
  readonly windowCheckpoints: WindowCheckpoints | undefined;
  readonly scheduler: Scheduler;
  private readonly requests = new Map<string, RequestState>();
  private readonly stopConfig: EngineConfig & { samplingKernels: SamplingKernels; grammars?: GrammarCompiler };
  private readonly kvEvents: KvEventRecorder | undefined;
  private readonly speculator: Speculator | undefined;
  /** the draft model and its cache (speculative method "draft_model") */
  readonly drafter: DraftModelDrafter | undefined;
  /** prefix blocks on disk (--kv-cache-dir), when on */
  readonly diskCache: DiskPrefixCache | undefined;
  /** a pooling model's requests (embeddings, rerank); undefined when the model generates */
  readonly pooling: PoolingRequests | undefined;
  /** encodes the images of each step (a model served with a vision projector) */
  readonly images: ImageEncoder | undefined;
  /**
   * Sees every logits row a token is sampled from ([vocab], valid only during the call):
   * how agreement tests compare the serving engine's logits with llama.cpp's. In-process only.
   */
  logitsTap: ((requestId: string, index: number, row: Float32Array) => void) | undefined;

  constructor(
    /** tokenizer: the vocabulary grammars compile against (without one, grammars are refused) */
    /** projector: the vision projector (--mmproj) whose embeddings images take in the prompt */
    readonly model: { readonly config: ModelConfig; readonly tensors: TensorSource; readonly tokenizer?: GrammarVocab; readonly projector?: VisionProjector | undefined },
    kernels: Kernels,
    readonly config: EngineConfig,
    /** the draft model of speculative method "draft_model" (its vocabulary checked: spec/draft-vocab.ts) */
    draftModel?: DraftModel,
  ) {
    const window = model.config.slidingWindow?.size;
    const swaBlocks = window !== undefined ? (config.swaBlocks ?? 0) : 0;
    const hybrid = model.config.linearAttention !== undefined;
    // what the cached KV chain cannot rebuild at a boundary is kept as checkpoints: a hybrid
    // model's recurrent state, a sliding-window pool's last window
    const needsCheckpoints = config.enablePrefixCaching && (hybrid || swaBlocks > 0);
    const numCheckpoints = needsCheckpoints ? (config.stateCheckpoints ?? 0) : 0;
    if (needsCheckpoints && numCheckpoints === 0) {
      throw new Error(`prefix caching for ${hybrid ? 'a hybrid model' : 'a sliding-window pool'} needs checkpoints (stateCheckpoints > 0): a cached prefix alone does not restore ${hybrid ? 'the recurrent state' : 'the window'}`);
    }
    // the running sequences' state slots, then the checkpoints'
    const kv = KvCache.forModel(model.config, config.numBlocks, config.blockSize, config.kvDtype, swaBlocks, config.maxNumSeqs + (hybrid ? numCheckpoints : 0));
    this.runner = new ModelRunner(createArchitecture(model.config, model.tensors, config.maxModelLen), kv, kernels);
    this.kvEvents = config.kvEvents && config.enablePrefixCaching ? new KvEventRecorder(config.numBlocks, config.blockSize, config.kvEvents.hashSeed) : undefined;
    const recurrent = kv.recurrent;
    const checkpoints = (this.checkpoints = recurrent && numCheckpoints > 0
      ? new StateCheckpoints(numCheckpoints, config.numBlocks, config.maxNumSeqs, (src, dst) => recurrent.copy(src, dst))
      : undefined);
    this.swaBlocks = swaBlocks > 0 ? new SwaBlocks(swaBlocks, config.blockSize, window!) : undefined;
    const windows = (this.windowCheckpoints = this.swaBlocks && numCheckpoints > 0 ? new WindowCheckpoints(numCheckpoints, this.swaBlocks) : undefined);
    if (config.kvCacheDir && (!config.enablePrefixCaching || hybrid || swaBlocks > 0 || model.config.pooling)) {
      throw new Error('--kv-cache-dir keeps prefix-cache blocks: it needs prefix caching on a model whose whole state is its KV blocks (not a hybrid model, a sliding-window pool or a pooling model)');
    }
    const disk = (this.diskCache = config.kvCacheDir ? new DiskPrefixCache(config.kvCacheDir, kv, config.blockSize) : undefined);
    this.blocks = new BlockManager({
      numBlocks: config.numBlocks, blockSize: config.blockSize, enablePrefixCaching: config.enablePrefixCaching, events: this.kvEvents,
      ...(disk && { onRegister: disk.registered.bind(disk) }),
      ...((checkpoints || windows) && { uncached: (b: number) => { checkpoints?.blockUncached(b); windows?.blockUncached(b); } }),
    });
    this.states = recurrent ? new StateSlots(config.maxNumSeqs, (src, dst) => recurrent.copy(src, dst)) : undefined;
    if (config.speculative && (this.swaBlocks || this.states)) throw new Error('speculative decoding needs every layer in the global KV blocks (no sliding-window pool, no recurrent state)');
    const spec = config.speculative;
    if (spec?.method === 'draft_model' && !draftModel) throw new Error(`speculative method draft_model: the draft model ${spec.model} is not loaded`);
    const drafter = (this.drafter = spec?.method === 'draft_model'
      ? new DraftModelDrafter(draftModel!, kernels, config, (seq) => this.requests.get(seq.requestId)?.params, spec.numSpeculativeTokens)
      : undefined);
    this.speculator = spec ? new Speculator(spec, drafter) : undefined;
    const policy = checkpoints || windows ? new CheckpointPolicy(this.blocks, checkpoints, windows) : undefined;
    const loader = disk && ((tokens: readonly number[], root: number) => disk.fill(this.blocks, tokens, root));
    this.scheduler = new Scheduler(config, this.blocks, this.swaBlocks, this.states, this.speculator, policy, loader);
    if (model.config.pooling && !config.wholeSequences) throw new Error('a pooling model computes every sequence whole (wholeSequences)');
    this.pooling = model.config.pooling ? new PoolingRequests(new Pooler(model.config, model.tensors), this.scheduler) : undefined;
    this.stopConfig = { ...config, samplingKernels: kernels };
    if (model.projector && model.config.pooling) throw new Error(`${model.projector.source}: a vision projector needs a generative model, not a pooling one`);
    this.images = model.projector ? new ImageEncoder(model.projector, kernels, model.config.hiddenSize) : undefined;
  }

  get hasWork(): boolean {
    return this.scheduler.hasWork;
  }

  /** Queues a request; a request that can never run is answered at once with an error delta. */
  add(req: AddRequest): RequestDelta | undefined {
    if (this.requests.has(req.id) || this.pooling?.has(req.id)) return errorDelta(req.id, `request id ${req.id} is already in use`);
    if (req.pool || this.pooling) return this.addPooling(req);
    let state: RequestState;
    try {
      if (req.params.grammar) this.grammarCompiler();
      state = new RequestState(req, this.model.config.vocabSize, this.stopConfig, this.config.maxNumSeqs);
    } catch (err) {
      return errorDelta(req.id, err instanceof Error ? err.message : String(err));
    }
    const maxLen = Math.min(this.config.maxModelLen, this.config.numBlocks * this.config.blockSize);
    if (req.promptIds.length === 0) return errorDelta(req.id, 'the prompt is empty');
    if (req.promptIds.length >= maxLen) {
      return errorDelta(req.id, `the prompt has ${req.promptIds.length} tokens; at most ${maxLen - 1} fit this engine's context`);
    }
    for (const id of req.promptIds) {
      if (id < 0 || id >= this.model.config.vocabSize) return errorDelta(req.id, `prompt token id ${id} is outside the vocabulary`);
    }
    const refused = req.images?.length ? checkEngineImages(req, this.images !== undefined) : undefined;
    if (refused) return errorDelta(req.id, refused);
    this.requests.set(req.id, state);
    // n above --max-num-seqs: the first forks into as many as run at once, the rest wait their turn
    this.scheduler.add(state.sequences[0]!);
    for (const seq of state.queued) this.scheduler.add(seq);
    return undefined;
  }

  /** A pooling request, checked: whole in one step, in the vocabulary, on a model that pools. */
  private addPooling(req: AddRequest): RequestDelta | undefined {
    if (!this.pooling) return errorDelta(req.id, `this ${this.model.config.arch} model generates; it does not pool (embeddings and rerank need an embedding or rerank model, or --runner pooling)`);
    if (!req.pool) return errorDelta(req.id, `this ${this.model.config.arch} model pools (embeddings, rerank); it does not generate`);
    if (req.images?.length) return errorDelta(req.id, 'a pooling request cannot carry images');
    const n = req.promptIds.length;
    const maxLen = Math.min(this.config.maxModelLen, this.config.maxNumBatchedTokens, this.config.numBlocks * this.config.blockSize);
    if (n === 0) return errorDelta(req.id, 'the input is empty');
    if (n > maxLen) return errorDelta(req.id, `the input has ${n} tokens; at most ${maxLen} fit this engine's context`);
    for (const id of req.promptIds) {
      if (id < 0 || id >= this.model.config.vocabSize) return errorDelta(req.id, `input token id ${id} is outside the vocabulary`);
    }
    this.pooling.add(req);
    return undefined;
  }

  /** Aborts requests (unknown ids are ignored): their blocks are free before the next step. */
  abort(ids: readonly string[]): void {
    for (const id of ids) {
      this.pooling?.abort(id);
      const state = this.requests.get(id);
      if (!state) continue;
      for (const seq of state.sequences) this.scheduler.finish(seq, 'abort');
    }
  }

  /** The grammar compiler for this model's tokenizer, made on first use (xgrammar must be loaded: EngineLoop does it). */
  grammarCompiler(): GrammarCompiler {
    if (this.stopConfig.grammars) return this.stopConfig.grammars;
    const xg = xgrammarIfLoaded();
    if (!xg) throw new Error('constrained decoding is unavailable: the grammar engine is not loaded');
    if (!this.model.tokenizer) throw new Error('constrained decoding needs the model\'s tokenizer');
    const stops = this.config.eosTokenIds.filter((id) => id < this.model.config.vocabSize);
    this.stopConfig.grammars = new GrammarCompiler(xg, this.model.tokenizer, this.model.config.vocabSize, stops);
    return this.stopConfig.grammars;
  }

  /** external: the blocks on disk too (this model's, --kv-cache-dir) */
  resetPrefixCache(external = false): boolean {
    const ok = this.blocks.resetPrefixCache();
    if (external) this.diskCache?.clear();
    return ok;
  }

  /** The prefix cache's counters as vLLM splits them: a lookup's hits in memory, then the blocks
   *  found on disk (its external cache). Disk blocks are loaded and registered before the lookup
   *  that finds them, so the memory's hits count them too: they are taken out here. */
  cacheStats(): Pick<StepStats, 'prefixCacheQueries' | 'prefixCacheHits' | 'kvCacheDir'> {
    const disk = this.diskCache;
    return {
      prefixCacheQueries: this.blocks.stats.queries,
      prefixCacheHits: this.blocks.stats.hits - (disk?.stats.hits ?? 0),
      ...(disk && { kvCacheDir: { ...disk.stats, bytes: disk.bytes } }),
    };
  }

  /** One step; undefined when there was nothing to do. */
  step(): StepOutput | undefined {
    const start = now();
    const { chunks, copyOps, swaCopyOps } = this.scheduler.schedule(start);
    let forwardMs = 0;
    let images: StepEmbeddings = NO_IMAGES;
    const advanced: Sequence[] = [];
    const deltas: RequestDelta[] = [];
    if (chunks.length > 0 && this.pooling) {
      const batch = buildBatch(chunks.map((c) => this.toBatchChunk(c, NO_IMAGES)), this.config.blockSize);
      const t0 = performance.now();
      const hidden = this.runner.hiddenStates(batch);
      const pooled = this.pooling.pool(chunks, batch, hidden, this.runner.kernels, now());
      forwardMs = performance.now() - t0;
      this.scheduler.observeStep(batch.tokenIds.length, forwardMs);
      this.scheduler.update(chunks);
      // pooled: the sequence is done and its blocks are freed now
      for (const { seq } of chunks) if (seq.numComputed === seq.tokens.length) this.scheduler.finish(seq, 'stop');
      deltas.push(...pooled);
    } else if (chunks.length > 0) {
      if (copyOps.length > 0 || swaCopyOps.length > 0) this.runner.kv.copyBlocks(copyOps, swaCopyOps);
      // the images these chunks cover, encoded in one call before the batch is built
      images = this.images ? this.images.encode(chunks) : NO_IMAGES;
      const batchChunks = chunks.map((c) => this.toBatchChunk(c, images));
      // grammar masks for the rows about to be sampled, before the matmuls start
      chunks.forEach(({ seq }, i) => {
        if (batchChunks[i]!.wantLogits) this.requests.get(seq.requestId)?.prepareMask(seq);
      });
      const built = buildBatch(batchChunks, this.config.blockSize);
      // Qwen's images take (t, h, w) rope positions, and the text after one goes on from its last
      const mrope = this.model.projector?.positions === 'mrope' && chunks.some((c) => c.seq.images.length > 0);
      const batch = mrope ? { ...built, ropePositions: mropePositions(built, chunks.map((c) => c.seq.images)) } : built;
      const t0 = performance.now();
      const logits = this.runner.execute(batch);
      forwardMs = performance.now() - t0;
      this.scheduler.observeStep(batch.tokenIds.length, forwardMs);
      forwardMs += images.encodeMs;
      const vocab = this.model.config.vocabSize;
      const time = now();
      // walk the logits rows in chunk order: prompt-logprob rows, then the row to sample from
      let row = 0;
      // a chunk with a draft: [draft.length + 1, vocab], one row per position verified
      const toSample: [Sequence, Float32Array, (readonly number[])?, Float32Array?][] = [];
      chunks.forEach(({ seq, draft, draftProbs }, i) => {
        const c = batchChunks[i]!;
        const rows = c.allLogits ? c.tokenIds.length : c.wantLogits ? 1 : 0;
        const block = logits.subarray(row * vocab, (row + rows) * vocab);
        row += rows;
        if (draft) toSample.push([seq, block, draft, draftProbs]);
        else {
          if (c.allLogits) this.requests.get(seq.requestId)?.addPromptLogprobs(seq, block, seq.numComputed);
          if (c.wantLogits) toSample.push([seq, block.subarray((rows - 1) * vocab)]);
        }
      });
      this.scheduler.update(chunks);
      for (const [seq, logitsRow, draft, draftProbs] of toSample) {
        if (seq.status !== 'running') continue; // aborted while its step ran
        const state = this.requests.get(seq.requestId)!;
        if (draft) {
          this.verify(state, seq, logitsRow, draft, draftProbs, time);
          advanced.push(seq);
          continue;
        }
        this.logitsTap?.(seq.requestId, seq.index, logitsRow);
        const children = state.sample(seq, logitsRow, time);
        for (const child of children) {
          this.blocks.fork(seq, child);
          this.swaBlocks?.fork(seq, child);
          this.states?.fork(seq, child);
          advanced.push(child);
        }
        if (children.length > 0) this.scheduler.addForks(seq, children);
        advanced.push(seq);
        for (const s of [seq, ...children]) {
          const finish = state.finishReason(s);
          if (finish) this.scheduler.finish(s, finish.reason, finish.stopTokenId);
        }
      }
    }
    for (const seq of advanced) if (seq.status !== 'finished') this.collect(seq, deltas);
    const finished = this.scheduler.drainFinished();
    for (const seq of finished) {
      this.collect(seq, deltas);
      const ended = this.pooling?.ended(seq);
      if (ended) deltas.push(ended);
    }
    // forgotten only after every completion's last delta is out
    for (const seq of finished) {
      const state = this.requests.get(seq.requestId);
      if (state?.allFinished()) {
        state.release();
        this.requests.delete(seq.requestId);
      }
    }
    const kvEvents = this.kvEvents?.drain();
    const spec = this.speculator?.drain();
    if (chunks.length === 0 && deltas.length === 0 && !kvEvents?.length) return undefined;
    return {
      type: 'step',
      deltas,
      ...(kvEvents?.length ? { kvEvents } : {}),
      stats: {
        numRunning: this.scheduler.numRunning,
        numWaiting: this.scheduler.numWaiting,
        kvCacheUsage: Math.max(this.blocks.usage(), this.swaBlocks?.usage() ?? 0),
        ...this.cacheStats(),
        numPreemptions: this.scheduler.numPreemptions,
        scheduledTokens: chunks.reduce((n, c) => n + c.numTokens + (c.draft?.length ?? 0), 0),
        forwardMs,
        ...(images.count > 0 && { encodeMs: images.encodeMs, imagesEncoded: images.count }),
        stepMs: now() - start,
        ...(spec && { spec }),
      },
    };
  }

  /** Samples seq's draft positions in order (rows [draft.length + 1, vocab]; q: a sampled draft's [draft.length, vocab]); keeps the accepted K/V. */
  private verify(state: RequestState, seq: Sequence, rows: Float32Array, draft: readonly number[], q: Float32Array | undefined, time: number): void {
    const tap = this.logitsTap && ((row: Float32Array) => this.logitsTap!(seq.requestId, seq.index, row));
    const accepted = state.sampleDraft(seq, rows, draft, time, tap, q);
    this.speculator!.record(seq, draft.length, accepted);
    const finish = state.finishReason(seq);
    if (finish) this.scheduler.finish(seq, finish.reason, finish.stopTokenId);
    else this.scheduler.acceptDraft(seq, accepted);
  }

  private toBatchChunk({ seq, numTokens, draft }: ScheduledChunk, images: StepEmbeddings): SequenceChunk {
    const from = seq.numComputed;
    const wantLogits = from + numTokens === seq.tokens.length;
    const tokens = seq.tokens.slice(from, from + numTokens);
    // an image's positions hold cache keys: the model reads IMAGE_TOKEN_ID and the image's embedding rows
    const embeds = this.images?.chunkEmbeds(seq, from, numTokens, images);
    return {
      tokenIds: draft ? [...tokens, ...draft] : seq.images.length > 0 ? tokens.map(modelTokenId) : tokens,
      ...(embeds && { embeds }),
      startPos: from,
      blockTable: seq.blockTable,
      ...(this.swaBlocks ? { swaBlockTable: seq.swa.blockTable } : {}),
      ...(this.states ? { stateSlot: seq.stateSlot } : {}),
      wantLogits,
      allLogits: draft !== undefined || this.requests.get(seq.requestId)?.wantsPromptLogprobs(seq) === true,
    };
  }

  /** Moves a sequence's unsent tokens into a delta. */
  private collect(seq: Sequence, deltas: RequestDelta[]): void {
    const state = this.requests.get(seq.requestId);
    if (!state) return;
    const delta = state.takeDelta(seq);
    if (delta) deltas.push(delta);
    if (seq.finishReason) {
      for (const unstarted of state.endUnstarted(seq.finishReason)) deltas.push(state.takeDelta(unstarted)!);
    }
  }
}

function errorDelta(id: string, error: string): RequestDelta {
  return { id, index: 0, tokenIds: new Int32Array(0), times: new Float64Array(0), finishReason: 'abort', error };
}
