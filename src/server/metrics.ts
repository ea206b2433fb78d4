// Prometheus metrics with vLLM's names, under both `vllm:` (so existing dashboards work)
// and `loom:`, labelled with model_name. Latencies come from the engine's token times.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineClient } from '../engine/client.js';
import { now } from '../engine/engine.js';
import type { StepOutput } from '../engine/protocol.js';
import type { GenerationObserver } from '../pipeline/generate.js';
import { advance, kvCacheDirMetrics } from './kv-cache-dir-metrics.js';

const PREFIXES = ['vllm:', 'loom:'] as const;
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const E2E_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const ITERATION_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
const PARAMS_N_BUCKETS = [1, 2, 5, 10, 20];

/** vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50… up to max */
export function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let exp = 1; ; exp *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * exp > max) return out;
      out.push(m * exp);
    }
  }
}

/** what a request asked for, for the request_params_* histograms */
export interface RequestShape {
  readonly n: number;
  readonly maxTokens: number | null;
}

/** one metric registered under every prefix, updated together */
class Twin<T extends Counter<string> | Gauge<string> | Histogram<string>> {
  constructor(readonly all: T[]) {}
  each(f: (m: T) => void): void {
    this.all.forEach(f);
  }
}

export class ServerMetrics {
  readonly registry = new Registry();
  /** vLLM v1 labels every family with the model and the engine index (loom runs one engine) */
  private readonly labels: { model_name: string; engine: string };
  private readonly ttft: Twin<Histogram<string>>;
  private readonly itl: Twin<Histogram<string>>;
  private readonly e2e: Twin<Histogram<string>>;
  private readonly queue: Twin<Histogram<string>>;
  private readonly running: Twin<Gauge<string>>;
  private readonly waiting: Twin<Gauge<string>>;
  private readonly kvUsage: Twin<Gauge<string>>;
  private readonly promptTokens: Twin<Counter<string>>;
  private readonly generationTokens: Twin<Counter<string>>;
  private readonly success: Twin<Counter<string>>;
  private readonly prefixQueries: Twin<Counter<string>>;
  private readonly prefixHits: Twin<Counter<string>>;
  /** vLLM's KV connector cache: for loom, the blocks kept on disk (--kv-cache-dir) */
  private readonly externalQueries: Twin<Counter<string>>;
  private readonly externalHits: Twin<Counter<string>>;
  private readonly preemptions: Twin<Counter<string>>;
  private readonly requestPromptTokens: Twin<Histogram<string>>;
  private readonly requestGenerationTokens: Twin<Histogram<string>>;
  private readonly iterationTokens: Twin<Histogram<string>>;
  private readonly prefillTime: Twin<Histogram<string>>;
  private readonly decodeTime: Twin<Histogram<string>>;
  private readonly inferenceTime: Twin<Histogram<string>>;
  private readonly paramsN: Twin<Histogram<string>>;
  private readonly paramsMaxTokens: Twin<Histogram<string>>;
  private readonly maxGenerationTokens: Twin<Histogram<string>>;
  private readonly timePerOutputToken: Twin<Histogram<string>>;
  private readonly specDrafts: Twin<Counter<string>>;
  private readonly specDraftTokens: Twin<Counter<string>>;
  private readonly specAccepted: Twin<Counter<string>>;
  private readonly specAcceptedPerPos: Twin<Counter<string>>;
  /** engine counters are cumulative; the Prometheus counters advance by the difference */
  private last = { queries: 0, hits: 0, preemptions: 0, externalQueries: 0, externalHits: 0 };
  /** generated tokens since the last busy-log line */
  tokensSinceLog = 0;
  /** speculative drafts since the last busy-log line */
  specSinceLog = { drafts: 0, draftTokens: 0, accepted: 0 };

  constructor(modelName: string, engine: EngineClient) {
    this.labels = { model_name: modelName, engine: '0' };
    const reg = [this.registry];
    const histogram = (name: string, help: string, buckets: number[], extra: string[] = []) =>
      new Twin(PREFIXES.map((p) => new Histogram({ name: p + name, help, buckets, labelNames: ['model_name', 'engine', ...extra], registers: reg })));
    const gauge = (name: string, help: string) => new Twin(PREFIXES.map((p) => new Gauge({ name: p + name, help, labelNames: ['model_name', 'engine'], registers: reg })));
    const counter = (name: string, help: string, extra: string[] = []) =>
      new Twin(PREFIXES.map((p) => new Counter({ name: p + name, help, labelNames: ['model_name', 'engine', ...extra], registers: reg })));
    this.ttft = histogram('time_to_first_token_seconds', 'Time to first token in seconds.', TTFT_BUCKETS);
    this.itl = histogram('inter_token_latency_seconds', 'Time between consecutive output tokens in seconds.', ITL_BUCKETS);
    this.e2e = histogram('e2e_request_latency_seconds', 'End-to-end request latency in seconds.', E2E_BUCKETS);
    this.queue = histogram('request_queue_time_seconds', 'Time a request waited before it was first scheduled, in seconds.', E2E_BUCKETS);
    this.running = gauge('num_requests_running', 'Sequences running in the engine.');
    this.waiting = gauge('num_requests_waiting', 'Sequences waiting to be scheduled.');
    this.kvUsage = gauge('kv_cache_usage_perc', 'KV-cache usage: 1 means 100 percent.');
    this.promptTokens = counter('prompt_tokens_total', 'Prefill tokens processed.');
    this.generationTokens = counter('generation_tokens_total', 'Generation tokens processed.');
    this.success = counter('request_success_total', 'Finished requests.', ['finished_reason']);
    this.prefixQueries = counter('prefix_cache_queries_total', 'Prefix-cache queries, in tokens.');
    this.prefixHits = counter('prefix_cache_hits_total', 'Prefix-cache hits, in tokens.');
    this.preemptions = counter('num_preemptions_total', 'Preemptions.');
    const tokenBuckets = buckets125(engine.info.maxModelLen);
    this.requestPromptTokens = histogram('request_prompt_tokens', 'Number of prefill tokens processed.', tokenBuckets);
    this.requestGenerationTokens = histogram('request_generation_tokens', 'Number of generation tokens processed.', tokenBuckets);
    this.iterationTokens = histogram('iteration_tokens_total', 'Histogram of number of tokens per engine_step.', ITERATION_BUCKETS);
    this.prefillTime = histogram('request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', E2E_BUCKETS);
    this.decodeTime = histogram('request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', E2E_BUCKETS);
    this.inferenceTime = histogram('request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', E2E_BUCKETS);
    this.paramsN = histogram('request_params_n', 'Histogram of the n request parameter.', PARAMS_N_BUCKETS);
    this.paramsMaxTokens = histogram('request_params_max_tokens', 'Histogram of the max_tokens request parameter.', tokenBuckets);
    this.maxGenerationTokens = histogram('request_max_num_generation_tokens', 'Histogram of maximum number of requested generation tokens.', tokenBuckets);
    this.timePerOutputToken = histogram('request_time_per_output_token_seconds', 'Histogram of time_per_output_token_seconds per request.', ITL_BUCKETS);
    // vLLM's prefix cache behind a KV connector (an offloading or LMCache connector): queries are
    // the tokens a lookup did not find in memory, hits those it found there. loom's is the disk
    // (--kv-cache-dir); without one they stay at zero
    this.externalQueries = counter('external_prefix_cache_queries_total', 'External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.');
    this.externalHits = counter('external_prefix_cache_hits_total', 'External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.');
    // vLLM's families for what loom does not have (multimodal inputs cache, sleep mode):
    // present at zero, and the engine always awake, so dashboards find every series
    const absent = [counter('mm_cache_queries_total', 'Multi-modal cache queries, in terms of number of queried items.'),
      counter('mm_cache_hits_total', 'Multi-modal cache hits, in terms of number of cached items.')];
    for (const twin of [this.externalQueries, this.externalHits, ...absent]) twin.each((c) => c.inc(this.labels, 0));
    for (const p of PREFIXES) {
      const sleep = new Gauge({
        name: `${p}engine_sleep_state`,
        help: 'Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.',
        labelNames: ['model_name', 'engine', 'sleep_state'],
        registers: reg,
      });
      for (const [state, value] of [['awake', 1], ['weights_offloaded', 0], ['discard_all', 0]] as const) sleep.set({ ...this.labels, sleep_state: state }, value);
    }
    // speculative decoding (vLLM's SpecDecodingProm): zero unless --speculative-config is on
    this.specDrafts = counter('spec_decode_num_drafts_total', 'Number of spec decoding drafts.');
    this.specDraftTokens = counter('spec_decode_num_draft_tokens_total', 'Number of draft tokens.');
    this.specAccepted = counter('spec_decode_num_accepted_tokens_total', 'Number of accepted tokens.');
    this.specAcceptedPerPos = counter('spec_decode_num_accepted_tokens_per_pos', 'Accepted tokens per draft position.', ['position']);
    // vLLM's cache_config_info: the KV cache's configuration as labels, value 1
    for (const p of PREFIXES) {
      const info = {
        block_size: String(engine.info.blockSize),
        num_gpu_blocks: String(engine.info.numBlocks),
        ...(engine.info.kvCacheDtype !== undefined && { cache_dtype: engine.info.kvCacheDtype }),
      };
      new Gauge({ name: `${p}cache_config_info`, help: 'Information of the LLMEngine CacheConfig', labelNames: ['model_name', 'engine', ...Object.keys(info)], registers: reg }).set({ ...this.labels, ...info }, 1);
    }
    // every series exists from the start, at zero, as dashboards expect
    for (const twin of [this.running, this.waiting, this.kvUsage]) twin.each((g) => g.set(this.labels, 0));
    for (const twin of [this.promptTokens, this.generationTokens, this.prefixQueries, this.prefixHits, this.preemptions, this.specDrafts, this.specDraftTokens, this.specAccepted]) {
      twin.each((c) => c.inc(this.labels, 0));
    }
    for (const reason of ['stop', 'length', 'abort']) this.success.each((c) => c.inc({ ...this.labels, finished_reason: reason }, 0));
    engine.onStep((step) => this.onStep(step));
    kvCacheDirMetrics(reg[0]!, this.labels, engine);
    // loom's own: vLLM exits instead of restarting its engine
    const restarts = new Counter({ name: 'loom:engine_restarts_total', help: 'Fresh engines started after the engine died or hung.', labelNames: Object.keys(this.labels), registers: reg });
    restarts.inc(this.labels, 0);
    // what the KV cache holds and takes (a q8_0 cache: ~1.88× the tokens of f16 in the same bytes)
    const capacity = new Gauge({ name: 'loom:kv_cache_capacity_tokens', help: 'Tokens the KV cache holds: blocks times block size.', labelNames: Object.keys(this.labels), registers: reg });
    capacity.set(this.labels, engine.info.numBlocks * engine.info.blockSize);
    if (engine.info.kvCacheBytes !== undefined) {
      const bytes = new Gauge({ name: 'loom:kv_cache_bytes', help: "Bytes of the KV cache's arrays (in its element type, --kv-cache-dtype).", labelNames: Object.keys(this.labels), registers: reg });
      bytes.set(this.labels, engine.info.kvCacheBytes);
    }
    // the vision projector's encoding (--mmproj): time a step's encode call took, images encoded
    const encode = new Histogram({ name: 'loom:image_encode_seconds', help: 'Time the vision projector took in an engine step that encoded images (one call for all of them).', buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], labelNames: Object.keys(this.labels), registers: reg });
    const images = new Counter({ name: 'loom:images_encoded_total', help: 'Images the vision projector encoded (a prefix-cache hit on an image encodes none).', labelNames: Object.keys(this.labels), registers: reg });
    images.inc(this.labels, 0);
    engine.onStep(({ stats }) => {
      if (!stats.imagesEncoded) return;
      encode.observe(this.labels, (stats.encodeMs ?? 0) / 1000);
      images.inc(this.labels, stats.imagesEncoded);
    });
    // process_resident_memory_bytes, nodejs_heap_size_used_bytes, … (what `loom bench soak` watches)
    collectDefaultMetrics({ register: this.registry });
    engine.onRestart?.(() => restarts.inc(this.labels));
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  private onStep({ stats }: StepOutput): void {
    this.running.each((g) => g.set(this.labels, stats.numRunning));
    this.waiting.each((g) => g.set(this.labels, stats.numWaiting));
    this.kvUsage.each((g) => g.set(this.labels, stats.kvCacheUsage));
    if (stats.scheduledTokens > 0) this.iterationTokens.each((h) => h.observe(this.labels, stats.scheduledTokens));
    const inc = (twin: Twin<Counter<string>>, by: number) => by > 0 && twin.each((c) => c.inc(this.labels, by));
    const disk = stats.kvCacheDir;
    inc(this.prefixQueries, advance(stats.prefixCacheQueries, this.last.queries));
    inc(this.prefixHits, advance(stats.prefixCacheHits, this.last.hits));
    inc(this.preemptions, advance(stats.numPreemptions, this.last.preemptions));
    if (disk) inc(this.externalQueries, advance(disk.queries, this.last.externalQueries));
    if (disk) inc(this.externalHits, advance(disk.hits, this.last.externalHits));
    this.last = { queries: stats.prefixCacheQueries, hits: stats.prefixCacheHits, preemptions: stats.numPreemptions, externalQueries: disk?.queries ?? 0, externalHits: disk?.hits ?? 0 };
    const spec = stats.spec;
    if (spec) {
      inc(this.specDrafts, spec.numDrafts);
      inc(this.specDraftTokens, spec.numDraftTokens);
      inc(this.specAccepted, spec.numAcceptedTokens);
      this.specSinceLog.drafts += spec.numDrafts;
      this.specSinceLog.draftTokens += spec.numDraftTokens;
      this.specSinceLog.accepted += spec.numAcceptedTokens;
      spec.acceptedPerPosition.forEach((n, position) => this.specAcceptedPerPos.each((c) => c.inc({ ...this.labels, position: String(position) }, n)));
    }
  }

  /** Records one request's latencies and counts; create it when the request arrives. */
  observer(shape?: RequestShape): GenerationObserver {
    const arrival = now();
    let lastTokenTime: number | undefined;
    let scheduled: number | undefined;
    let firstTokenTime: number | undefined;
    let promptCounted = false;
    let shapeCounted = false;
    const seconds = (ms: number): number => Math.max(0, ms) / 1000;
    return {
      onScheduled: (time) => {
        scheduled = time;
        this.queue.each((h) => h.observe(this.labels, Math.max(0, time - arrival) / 1000));
      },
      onTokens: (times, first) => {
        if (times.length === 0) return;
        firstTokenTime ??= times[0]!;
        if (first) this.ttft.each((h) => h.observe(this.labels, Math.max(0, times[0]! - arrival) / 1000));
        for (const t of times) {
          if (lastTokenTime !== undefined) this.itl.each((h) => h.observe(this.labels, Math.max(0, t - lastTokenTime!) / 1000));
          lastTokenTime = t;
        }
        this.tokensSinceLog += times.length;
      },
      onFinish: (reason, promptTokens, outputTokens) => {
        this.e2e.each((h) => h.observe(this.labels, (now() - arrival) / 1000));
        if (!promptCounted) this.promptTokens.each((c) => c.inc(this.labels, promptTokens));
        promptCounted = true;
        this.generationTokens.each((c) => c.inc(this.labels, outputTokens));
        this.success.each((c) => c.inc({ ...this.labels, finished_reason: reason }));
        this.requestPromptTokens.each((h) => h.observe(this.labels, promptTokens));
        this.requestGenerationTokens.each((h) => h.observe(this.labels, outputTokens));
        // each completion of n is a request of its own in vLLM v1: its maximum is its own count
        this.maxGenerationTokens.each((h) => h.observe(this.labels, outputTokens));
        if (scheduled !== undefined && firstTokenTime !== undefined && lastTokenTime !== undefined) {
          const [start, first, last] = [scheduled, firstTokenTime, lastTokenTime];
          this.prefillTime.each((h) => h.observe(this.labels, seconds(first - start)));
          this.decodeTime.each((h) => h.observe(this.labels, seconds(last - first)));
          this.inferenceTime.each((h) => h.observe(this.labels, seconds(last - start)));
          if (outputTokens > 1) this.timePerOutputToken.each((h) => h.observe(this.labels, seconds(last - first) / (outputTokens - 1)));
        }
        if (shape && !shapeCounted) {
          shapeCounted = true;
          this.paramsN.each((h) => h.observe(this.labels, shape.n));
          if (shape.maxTokens !== null) this.paramsMaxTokens.each((h) => h.observe(this.labels, shape.maxTokens!));
        }
      },
    };
  }
}
