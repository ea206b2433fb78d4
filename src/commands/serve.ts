// `loom serve`: the OpenAI-compatible HTTP server over an engine in a worker thread.
import { Command, Option } from 'commander';
import { ENGINE_DEFAULTS } from '../engine/options.js';
import type { EngineOptions } from '../engine/options.js';
import type { EngineInfo } from '../engine/client.js';
import { LOGPROBS_MODES } from '../engine/logprobs.js';
import type { LogprobsMode } from '../engine/logprobs.js';
import { SUPERVISOR_DEFAULTS, SupervisedEngineClient } from '../engine/supervisor.js';
import { DEFAULT_STEP_TIMEOUT_MS } from '../engine/worker-client.js';
import { InvalidArgumentError } from '../errors.js';
import { describeModel } from '../model/describe.js';
import { loadModel } from '../model/load.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../server/app.js';
import { offlineFromEnv } from '../model/hub.js';
import { resolveModelArg } from '../model/model-arg.js';
import { withEnvAndConfig } from './config.js';
import { Connections } from '../server/connections.js';
import { LIMIT_DEFAULTS } from '../pipeline/limits.js';
import { NETWORK_DEFAULTS } from '../server/network.js';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { installShutdown } from './serve-shutdown.js';
import { kvCacheDtypeOption, numberOption } from './parse.js';
import type { KvCacheDtypeOption } from './parse.js';
import { TokenizerPool } from '../server/tokenizer-pool.js';
import { publishKvEvents } from '../server/kv-events-publisher.js';
import { hostname } from 'node:os';
import { loadChatTemplate } from '../tokenizer/chat-template.js';
import { REASONING_PARSERS } from '../pipeline/reasoning/parser.js';
import { reasoningParserForTemplate } from '../pipeline/reasoning/formats.js';
import type { ReasoningParserName } from '../pipeline/reasoning/parser.js';
import { TOOL_CALL_PARSERS } from '../pipeline/tools/parsers.js';
import type { ToolCallParserName } from '../pipeline/tools/parsers.js';
import { RUNNER_KINDS } from '../model/pooling.js';
import type { RunnerKind } from '../model/pooling.js';
import { addLoadFlags, loadOptionsOf } from './load-flags.js';
import { addVisionFlags, imageLimitsOf, openProjector, projectorPath } from './vision-flags.js';
import type { VisionFlags } from './vision-flags.js';
import { ImagePool } from '../server/image-pool.js';
import { inlineVision } from '../pipeline/images.js';
import type { LoadFlags } from './load-flags.js';
import { addImageFlags, bodyLimitFor, imageOptionsOf } from './image-flags.js';
import type { ImageFlags } from './image-flags.js';
import { addKvCacheDirFlags, kvCacheDirOptionsOf } from './kv-cache-dir-flags.js';
import type { KvCacheDirFlags } from './kv-cache-dir-flags.js';

interface ServeFlags extends LoadFlags, ImageFlags, VisionFlags, KvCacheDirFlags {
  model?: string;
  host: string;
  port: number;
  apiKey?: string;
  servedModelName?: string;
  maxModelLen?: number;
  backend: 'auto' | 'native' | 'reference';
  threads?: number;
  kvCacheMemory: string;
  kvCacheDtype: KvCacheDtypeOption;
  blockSize: number;
  maxNumSeqs: number;
  maxNumBatchedTokens?: number;
  runner: RunnerKind;
  stepTimeFactor: number;
  enablePrefixCaching: boolean;
  stateCheckpoints?: number;
  logprobsMode: LogprobsMode;
  maxPendingRequests: number;
  tokenizerPoolSize: number;
  imageWorkers: number;
  shutdownTimeout: number;
  maxEngineRestarts: number;
  engineRestartWindow: number;
  engineStepTimeout: number;
  headerTimeout: number;
  requestTimeout: number;
  maxHeaderSize: number;
  sslKeyfile?: string;
  sslCertfile?: string;
  allowedOrigins: string[];
  disableLogRequests?: boolean;
  maxN: number;
  maxStopStrings: number;
  maxLogitBias: number;
  offline?: boolean;
  cacheDir?: string;
  webui: boolean;
  kvEventsEndpoint?: string;
  kvEventsTopic?: string;
  kvEventsReplayEndpoint?: string;
  kvEventsHashSeed: string;
  speculativeConfig?: string;
  chatTemplate?: string;
  reasoningParser?: ReasoningParserName;
  toolCallParser?: ToolCallParserName;
}

export function serveCommand(): Command {
  const n = numberOption;
  // the --kv-cache-dir flags right after the prefix cache's own, as --help listed them before
  const cmd = addKvCacheDirFlags(new Command('serve')
    .description('serve a model over an OpenAI-compatible HTTP API')
    .option('-m, --model <path>', 'GGUF file, Hugging Face folder, hf:ORG/REPO[:FILE] from the Hub, or a cached model\'s name (default: the built-in stories260K)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .addOption(new Option('--port <port>', 'port').default(8000).argParser(n('port', true)))
    .option('--api-key <key>', 'require "Authorization: Bearer <key>"')
    .option('--served-model-name <name>', 'the model name clients use (default: the file or repo name)')
    .addOption(new Option('--max-model-len <n>', "context length (default: the model's)").argParser(n('max-model-len', true)))
    .addOption(new Option('--backend <name>', 'kernels').choices(['auto', 'native', 'reference']).default(ENGINE_DEFAULTS.backend))
    .addOption(new Option('--threads <n>', 'compute threads (default: hardware threads)').argParser(n('threads', true)))
    .option('--kv-cache-memory <size>', 'KV cache: bytes (4GiB, 512MB) or a fraction of free memory (0.2)', ENGINE_DEFAULTS.kvCacheMemory)
    .addOption(kvCacheDtypeOption())
    .addOption(new Option('--block-size <n>', 'tokens per KV block').default(ENGINE_DEFAULTS.blockSize).argParser(n('block-size', true)))
    .addOption(new Option('--max-num-seqs <n>', 'most sequences running at once').default(ENGINE_DEFAULTS.maxNumSeqs).argParser(n('max-num-seqs', true)))
    .addOption(
      new Option('--max-num-batched-tokens <n>', `token budget of one engine step (default: ${ENGINE_DEFAULTS.maxNumBatchedTokens}; for pooling models at least the context)`).argParser(n('max-num-batched-tokens', true)),
    )
    .addOption(
      new Option(
        '--step-time-factor <f>',
        'while sequences decode, a step that also prefills may take f × a decode-only step (measured online); prefill chunks are sized to fit. 0: no limit (prefill fills --max-num-batched-tokens)',
      )
        .default(ENGINE_DEFAULTS.stepTimeFactor)
        .argParser(n('step-time-factor', false)),
    )
    .option('--no-enable-prefix-caching', 'turn automatic prefix caching off'))
    .addOption(
      new Option(
        '--state-checkpoints <n>',
        'prefix caching for hybrid models (Qwen3.5: checkpoints of a sequence\'s recurrent state) and sliding-window models (Gemma: pinned windows), ' +
          'out of --kv-cache-memory (default: 2 per --max-num-seqs, at most a quarter of the memory; 0: no prefix caching for these models)',
      ).argParser(n('state-checkpoints', true)),
    )
    .addOption(new Option('--runner <kind>', 'pooling (embeddings, rerank) or generate; auto: what the model file says').choices([...RUNNER_KINDS]).default('auto'))
    .addOption(new Option('--logprobs-mode <mode>', 'what logprobs report').choices([...LOGPROBS_MODES]).default(ENGINE_DEFAULTS.logprobsMode))
    .addOption(new Option('--max-pending-requests <n>', 'requests in flight beyond which new ones get 429').default(1024).argParser(n('max-pending-requests', true)))
    .addOption(
      new Option('--tokenizer-pool-size <n>', 'worker threads that tokenize long prompts, decode long id lists and render long chats, so the serving thread never blocks (0: all on the serving thread)')
        .default(1)
        .argParser(n('tokenizer-pool-size', true)),
    )
    .addOption(new Option('--image-workers <n>', 'with --mmproj: worker threads that decode and prepare images (0: decoding on libuv\'s pool, the resize on the serving thread)').default(1).argParser(n('image-workers', true)))
    .addOption(new Option('--shutdown-timeout <s>', 'seconds in-flight requests get to finish on SIGTERM').default(30).argParser(n('shutdown-timeout', false)))
    .addOption(
      new Option('--max-engine-restarts <n>', 'engine failures tolerated within --engine-restart-window; one more exits with code 1')
        .default(SUPERVISOR_DEFAULTS.maxRestarts)
        .argParser(n('max-engine-restarts', true)),
    )
    .addOption(new Option('--engine-restart-window <s>', 'seconds over which engine failures are counted').default(SUPERVISOR_DEFAULTS.restartWindowMs / 1000).argParser(n('engine-restart-window', false)))
    .addOption(
      new Option('--engine-step-timeout <s>', 'an engine step longer than this counts as a hung engine (0: no watchdog)')
        .default(DEFAULT_STEP_TIMEOUT_MS / 1000)
        .argParser(n('engine-step-timeout', false)),
    )
    .addOption(new Option('--header-timeout <s>', 'seconds a client has to send its request headers').default(NETWORK_DEFAULTS.headersTimeoutMs / 1000).argParser(n('header-timeout', false)))
    .addOption(new Option('--request-timeout <s>', 'seconds a client has to send its whole request, body included').default(NETWORK_DEFAULTS.requestTimeoutMs / 1000).argParser(n('request-timeout', false)))
    .addOption(new Option('--max-header-size <bytes>', 'largest request head (request line and headers)').default(NETWORK_DEFAULTS.maxHeaderBytes).argParser(n('max-header-size', true)))
    .option('--ssl-keyfile <path>', 'PEM private key: serve HTTPS (with --ssl-certfile)')
    .option('--ssl-certfile <path>', 'PEM certificate chain')
    .option('--allowed-origins <list>', 'CORS: origins browsers may call from, comma-separated or a JSON list ("*" for any; default none)', parseOrigins, [])
    .addOption(new Option('--max-n <n>', 'most completions (n) per prompt').default(LIMIT_DEFAULTS.maxN).argParser(n('max-n', true)))
    .addOption(new Option('--max-stop-strings <n>', 'most stop strings per request').default(LIMIT_DEFAULTS.maxStopStrings).argParser(n('max-stop-strings', true)))
    .addOption(new Option('--max-logit-bias <n>', 'most logit_bias entries per request').default(LIMIT_DEFAULTS.maxLogitBias).argParser(n('max-logit-bias', true)))
    .option('--disable-log-requests', 'no log line per request (the default line never carries prompt text)')
    .option('--offline', 'never contact the Hub: use the local cache only (also HF_HUB_OFFLINE=1)')
    .option('--cache-dir <dir>', 'where hf: downloads go (default: $LOOM_CACHE or ~/.cache/loom)')
    .option('--no-webui', 'no chat page at /')
    .option('--kv-events-endpoint <url>', "publish prefix-cache events over ZeroMQ in vLLM's format (tcp://*:5557 binds, tcp://host:port connects)")
    .option('--kv-events-topic <topic>', 'ZeroMQ topic of the KV events (default: kv@HOSTNAME@MODEL, as llm-d expects)')
    .option('--kv-events-replay-endpoint <url>', 'ZeroMQ ROUTER address that replays missed KV event batches')
    .option('--kv-events-hash-seed <seed>', "seed of the KV events' block hashes; set the router's hashSeed to the same (default: $PYTHONHASHSEED or empty)", process.env.PYTHONHASHSEED ?? '')
    .option('--speculative-config <json>', 'speculative decoding as vLLM\'s, e.g. \'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}\'')
    .option('--chat-template <file-or-string>', "a Jinja chat template (a file, or the template itself) used instead of the model's")
    .addOption(new Option('--reasoning-parser <name>', 'return the reasoning (<think>…</think>; gemma4: the thought channel; openai_gptoss: the analysis channel) as reasoning_content; structured output starts after it [openai_gptoss for a harmony template]').choices([...REASONING_PARSERS]))
    .addOption(new Option('--tool-call-parser <name>', "how the model writes tool calls (default: from its chat template)").choices([...TOOL_CALL_PARSERS]))
    .action((flags: ServeFlags) => runServe(flags));
  return withEnvAndConfig(addVisionFlags(addLoadFlags(addImageFlags(cmd))));
}

async function runServe(flags: ServeFlags): Promise<void> {
  if (flags.tokenizerPoolSize < 0 || flags.tokenizerPoolSize > 64) throw new InvalidArgumentError(`--tokenizer-pool-size expects 0 to 64 workers, got ${flags.tokenizerPoolSize}`);
  const resolved = await resolveModelArg(flags.model, { offline: flags.offline ?? offlineFromEnv(), cacheDir: flags.cacheDir });
  const path = resolved.path;
  // this thread's copy serves the config and tokenizer; the engine's worker loads (and locks) the weights
  const model = loadModel(path, { ...loadOptionsOf(flags), mlock: false });
  // a bad template is a startup error, not a 400 on every chat
  const chatTemplate = flags.chatTemplate === undefined ? undefined : loadChatTemplate(flags.chatTemplate);
  const mmproj = projectorPath(flags, path);
  const engineOptions: EngineOptions = {
    model: path,
    backend: flags.backend,
    ...(flags.threads !== undefined && { threads: flags.threads }),
    kvCacheMemory: flags.kvCacheMemory,
    ...(flags.kvCacheDtype !== undefined && { kvCacheDtype: flags.kvCacheDtype }),
    blockSize: flags.blockSize,
    maxNumSeqs: flags.maxNumSeqs,
    ...(flags.maxNumBatchedTokens !== undefined && { maxNumBatchedTokens: flags.maxNumBatchedTokens }),
    runner: flags.runner,
    stepTimeFactor: flags.stepTimeFactor,
    ...(flags.maxModelLen !== undefined && { maxModelLen: flags.maxModelLen }),
    enablePrefixCaching: flags.enablePrefixCaching,
    ...kvCacheDirOptionsOf(flags),
    ...(flags.stateCheckpoints !== undefined && { stateCheckpoints: flags.stateCheckpoints }),
    logprobsMode: flags.logprobsMode,
    ...(flags.kvEventsEndpoint !== undefined && { kvEvents: { hashSeed: flags.kvEventsHashSeed } }),
    ...(flags.speculativeConfig !== undefined && { speculativeConfig: flags.speculativeConfig }),
    ...(mmproj !== undefined && { mmproj }),
    ...loadOptionsOf(flags),
  };
  // a projector that does not fit the model is a start-up error naming the file
  const images = imageOptionsOf(flags);
  // one byte bound: the APIs check it as they parse, the pipeline again on what it decodes
  const imageLimits = imageLimitsOf(flags, images.maxImageBytes);
  const projector = openProjector(mmproj, model.config, loadOptionsOf(flags));
  if ((flags.sslKeyfile === undefined) !== (flags.sslCertfile === undefined)) throw new InvalidArgumentError('--ssl-keyfile and --ssl-certfile go together');
  const tls = flags.sslKeyfile && flags.sslCertfile ? { key: readPem(flags.sslKeyfile, 'ssl-keyfile'), cert: readPem(flags.sslCertfile, 'ssl-certfile') } : undefined;
  const log = (line: string): void => console.error(`loom: ${line}`);
  let app: { close(): Promise<unknown> } | undefined;
  const engine = await SupervisedEngineClient.start(engineOptions, {
    ...SUPERVISOR_DEFAULTS,
    maxRestarts: flags.maxEngineRestarts,
    restartWindowMs: flags.engineRestartWindow * 1000,
    stepTimeoutMs: flags.engineStepTimeout * 1000,
    log,
    onGiveUp: (reason) => {
      log(`${reason}: giving up`);
      setTimeout(() => process.exit(1), 1000).unref();
      void app?.close().finally(() => process.exit(1));
    },
  });
  const servedModelName = flags.servedModelName ?? resolved.name;
  const kvEvents = flags.kvEventsEndpoint === undefined ? undefined : await publishKvEvents(engine, {
    endpoint: flags.kvEventsEndpoint,
    topic: flags.kvEventsTopic ?? `kv@${hostname()}@${servedModelName}`,
    ...(flags.kvEventsReplayEndpoint !== undefined && { replayEndpoint: flags.kvEventsReplayEndpoint }),
  });
  const tokenizerPool = flags.tokenizerPoolSize > 0 ? await TokenizerPool.start({ modelPath: path, size: flags.tokenizerPoolSize, chatTemplate }) : undefined;
  const vision = projector && (flags.imageWorkers > 0
    ? await ImagePool.start(projector, { mmproj: mmproj!, textConfig: model.config, limits: imageLimits }, flags.imageWorkers)
    : inlineVision(projector, imageLimits));
  const built = buildApp({
    engine,
    tokenizer: model.tokenizer,
    tokenizerPool,
    vision,
    options: {
      servedModelName,
      modelRoot: flags.model,
      maxModelLen: engine.info.maxModelLen,
      apiKey: flags.apiKey,
      maxPendingRequests: flags.maxPendingRequests,
      slowClientTimeoutMs: 30_000,
      bodyLimitBytes: bodyLimitFor(images),
      images,
      webui: flags.webui,
      description: describeModel(model),
      network: { tls, headersTimeoutMs: flags.headerTimeout * 1000, requestTimeoutMs: flags.requestTimeout * 1000, maxHeaderBytes: flags.maxHeaderSize },
      allowedOrigins: flags.allowedOrigins,
      logRequests: !flags.disableLogRequests,
      limits: { maxN: flags.maxN, maxStopStrings: flags.maxStopStrings, maxLogitBias: flags.maxLogitBias },
      chatTemplate,
      // gpt-oss's harmony channels are split without being asked, as vLLM and llama-server do
      reasoningParser: flags.reasoningParser ?? reasoningParserForTemplate(chatTemplate ?? model.tokenizer.chatTemplate),
      toolCallParser: flags.toolCallParser,
    },
  });
  const ctx = built.ctx;
  app = built.app;
  const connections = new Connections(built.app.server as Server);
  try {
    await built.app.listen({ host: flags.host, port: flags.port });
  } catch (err) {
    await engine.close();
    await tokenizerPool?.close();
    const code = (err as { code?: string }).code;
    const why = code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : code === 'EADDRNOTAVAIL' ? 'no such address on this machine' : (err as Error).message;
    throw new InvalidArgumentError(`cannot listen on ${flags.host}:${flags.port}: ${why} (--host, --port)`);
  }
  const address = built.app.server.address();
  const where = typeof address === 'object' && address ? `${address.address}:${address.port}` : String(address);
  console.error(`loom: serving ${servedModelName} on ${tls ? 'https' : 'http'}://${where} (${kvCacheLine(engine.info)}, context ${engine.info.maxModelLen})`);
  for (const note of engine.info.notes ?? []) console.error(`loom: ${note}`);
  console.error(`loom: ${addressesLine(address, flags.webui, tls ? 'https' : 'http')}`);

  // one line every 10 s while busy
  let lastLog = Date.now();
  const ticker = setInterval(() => {
    const stats = engine.stats;
    const elapsed = (Date.now() - lastLog) / 1000;
    lastLog = Date.now();
    const tokens = ctx.metrics.tokensSinceLog;
    ctx.metrics.tokensSinceLog = 0;
    const spec = ctx.metrics.specSinceLog;
    ctx.metrics.specSinceLog = { drafts: 0, draftTokens: 0, accepted: 0 };
    if (ctx.inFlight === 0 && tokens === 0) return;
    // as vLLM's SpecDecoding line: share of draft tokens accepted, tokens per verify step
    const drafting = spec.drafts > 0 ? `, drafts ${((spec.accepted / spec.draftTokens) * 100).toFixed(0)}% accepted, ${(1 + spec.accepted / spec.drafts).toFixed(2)} tokens per draft` : '';
    console.error(
      `loom: ${(tokens / elapsed).toFixed(1)} tokens/s generated, ${stats?.numRunning ?? 0} running, ${stats?.numWaiting ?? 0} waiting, KV cache ${((stats?.kvCacheUsage ?? 0) * 100).toFixed(1)}%${drafting}`,
    );
  }, 10_000);
  ticker.unref();

  installShutdown({
    app: built.app,
    engine,
    connections,
    timeoutMs: flags.shutdownTimeout * 1000,
    inFlight: () => ctx.inFlight,
    log,
    onStop: () => (ctx.draining = true),
    afterEngine: async () => await kvEvents?.close(),
  });
}

function readPem(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new InvalidArgumentError(`--${flag} ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** `a,b` or `["a", "b"]` (vLLM's form) */
function parseOrigins(value: string): string[] {
  const text = value.trim();
  if (text.startsWith('[')) {
    const list: unknown = JSON.parse(text);
    if (!Array.isArray(list) || !list.every((o) => typeof o === 'string')) throw new InvalidArgumentError('--allowed-origins: expected a JSON list of strings');
    return list;
  }
  return text.split(',').map((o) => o.trim()).filter((o) => o.length > 0);
}

/** where people point a browser and their clients */
function addressesLine(address: ReturnType<FastifyInstance['server']['address']>, webui: boolean, scheme: 'http' | 'https'): string {
  if (typeof address !== 'object' || !address) return `listening on ${String(address)}`;
  const host = address.address === '0.0.0.0' || address.address === '::' ? 'localhost' : address.address.includes(':') ? `[${address.address}]` : address.address;
  const base = `${scheme}://${host}:${address.port}`;
  return `OpenAI API at ${base}/v1, Ollama API at ${base}/api${webui ? `, web chat at ${base}/` : ''}`;
}

/** "KV cache q8_0: 1234 blocks of 16 tokens = 19744 tokens, 512.0 MiB" */
function kvCacheLine(info: EngineInfo): string {
  const tokens = info.numBlocks * info.blockSize;
  const bytes = info.kvCacheBytes !== undefined ? `, ${(info.kvCacheBytes / 2 ** 20).toFixed(1)} MiB` : '';
  return `KV cache${info.kvCacheDtype !== undefined ? ` ${info.kvCacheDtype}` : ''}: ${info.numBlocks} blocks of ${info.blockSize} tokens = ${tokens} tokens${bytes}`;
}
