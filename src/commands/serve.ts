// `loom serve`: the OpenAI-compatible HTTP server over an engine in a worker thread.
import { Command, Option } from 'commander';
import { ENGINE_DEFAULTS } from '../engine/options.js';
import type { EngineOptions } from '../engine/options.js';
import { LOGPROBS_MODES } from '../engine/logprobs.js';
import type { LogprobsMode } from '../engine/logprobs.js';
import { WorkerEngineClient } from '../engine/worker-client.js';
import { InvalidArgumentError } from '../errors.js';
import { loadModel } from '../model/load.js';
import { buildApp } from '../server/app.js';
import { resolveModelPath } from '../model/hub.js';
import { numberOption } from './parse.js';
import { publishKvEvents } from '../server/kv-events-publisher.js';
import { hostname } from 'node:os';
import { loadChatTemplate } from '../tokenizer/chat-template.js';
import { REASONING_PARSERS } from '../server/reasoning/parser.js';
import type { ReasoningParserName } from '../server/reasoning/parser.js';
import { TOOL_CALL_PARSERS } from '../server/tools/parsers.js';
import type { ToolCallParserName } from '../server/tools/parsers.js';

interface ServeFlags {
  model: string;
  host: string;
  port: number;
  apiKey?: string;
  servedModelName?: string;
  maxModelLen?: number;
  backend: 'auto' | 'native' | 'reference';
  threads?: number;
  kvCacheMemory: string;
  kvCacheDtype: 'f16' | 'f32';
  blockSize: number;
  maxNumSeqs: number;
  maxNumBatchedTokens: number;
  enablePrefixCaching: boolean;
  logprobsMode: LogprobsMode;
  maxPendingRequests: number;
  shutdownTimeout: number;
  offline?: boolean;
  cacheDir?: string;
  kvEventsEndpoint?: string;
  kvEventsTopic?: string;
  kvEventsReplayEndpoint?: string;
  kvEventsHashSeed: string;
  chatTemplate?: string;
  reasoningParser?: ReasoningParserName;
  toolCallParser?: ToolCallParserName;
}

export function serveCommand(): Command {
  const n = numberOption;
  return new Command('serve')
    .description('serve a model over an OpenAI-compatible HTTP API')
    .requiredOption('-m, --model <path>', 'GGUF file, Hugging Face folder, or hf:ORG/REPO[:FILE] from the Hub')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .addOption(new Option('--port <port>', 'port').default(8000).argParser(n('port', true)))
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" (also LOOM_API_KEY)', process.env.LOOM_API_KEY)
    .option('--served-model-name <name>', 'the model name clients use (default: the file or repo name)')
    .addOption(new Option('--max-model-len <n>', "context length (default: the model's)").argParser(n('max-model-len', true)))
    .addOption(new Option('--backend <name>', 'kernels').choices(['auto', 'native', 'reference']).default(ENGINE_DEFAULTS.backend))
    .addOption(new Option('--threads <n>', 'compute threads (default: hardware threads)').argParser(n('threads', true)))
    .option('--kv-cache-memory <size>', 'KV cache: bytes (4GiB, 512MB) or a fraction of free memory (0.2)', ENGINE_DEFAULTS.kvCacheMemory)
    .addOption(new Option('--kv-cache-dtype <type>', 'KV cache element type').choices(['f16', 'f32']).default(ENGINE_DEFAULTS.kvCacheDtype))
    .addOption(new Option('--block-size <n>', 'tokens per KV block').default(ENGINE_DEFAULTS.blockSize).argParser(n('block-size', true)))
    .addOption(new Option('--max-num-seqs <n>', 'most sequences running at once').default(ENGINE_DEFAULTS.maxNumSeqs).argParser(n('max-num-seqs', true)))
    .addOption(
      new Option('--max-num-batched-tokens <n>', 'token budget of one engine step').default(ENGINE_DEFAULTS.maxNumBatchedTokens).argParser(n('max-num-batched-tokens', true)),
    )
    .option('--no-enable-prefix-caching', 'turn automatic prefix caching off')
    .addOption(new Option('--logprobs-mode <mode>', 'what logprobs report').choices([...LOGPROBS_MODES]).default(ENGINE_DEFAULTS.logprobsMode))
    .addOption(new Option('--max-pending-requests <n>', 'requests in flight beyond which new ones get 429').default(1024).argParser(n('max-pending-requests', true)))
    .addOption(new Option('--shutdown-timeout <s>', 'seconds in-flight requests get to finish on SIGTERM').default(30).argParser(n('shutdown-timeout', false)))
    .option('--offline', 'never contact the Hub: use the local cache only (also HF_HUB_OFFLINE=1)')
    .option('--cache-dir <dir>', 'where hf: downloads go (default: $LOOM_CACHE or ~/.cache/loom)')
    .option('--kv-events-endpoint <url>', "publish prefix-cache events over ZeroMQ in vLLM's format (tcp://*:5557 binds, tcp://host:port connects)")
    .option('--kv-events-topic <topic>', 'ZeroMQ topic of the KV events (default: kv@HOSTNAME@MODEL, as llm-d expects)')
    .option('--kv-events-replay-endpoint <url>', 'ZeroMQ ROUTER address that replays missed KV event batches')
    .option('--kv-events-hash-seed <seed>', "seed of the KV events' block hashes; set the router's hashSeed to the same (default: $PYTHONHASHSEED or empty)", process.env.PYTHONHASHSEED ?? '')
    .option('--chat-template <file-or-string>', "a Jinja chat template (a file, or the template itself) used instead of the model's")
    .addOption(new Option('--reasoning-parser <name>', 'return <think>…</think> text as reasoning_content').choices([...REASONING_PARSERS]))
    .addOption(new Option('--tool-call-parser <name>', "how the model writes tool calls (default: from its chat template)").choices([...TOOL_CALL_PARSERS]))
    .action((flags: ServeFlags) => runServe(flags));
}

async function runServe(flags: ServeFlags): Promise<void> {
  const path = await resolveModelPath(flags.model, { offline: flags.offline ?? process.env.HF_HUB_OFFLINE === '1', cacheDir: flags.cacheDir });
  const model = loadModel(path);
  // a bad template is a startup error, not a 400 on every chat
  const chatTemplate = flags.chatTemplate === undefined ? undefined : loadChatTemplate(flags.chatTemplate);
  const engineOptions: EngineOptions = {
    model: path,
    backend: flags.backend,
    ...(flags.threads !== undefined && { threads: flags.threads }),
    kvCacheMemory: flags.kvCacheMemory,
    kvCacheDtype: flags.kvCacheDtype,
    blockSize: flags.blockSize,
    maxNumSeqs: flags.maxNumSeqs,
    maxNumBatchedTokens: flags.maxNumBatchedTokens,
    ...(flags.maxModelLen !== undefined && { maxModelLen: flags.maxModelLen }),
    enablePrefixCaching: flags.enablePrefixCaching,
    logprobsMode: flags.logprobsMode,
    ...(flags.kvEventsEndpoint !== undefined && { kvEvents: { hashSeed: flags.kvEventsHashSeed } }),
  };
  const engine = await WorkerEngineClient.start(engineOptions);
  const servedModelName = flags.servedModelName ?? defaultModelName(flags.model);
  const kvEvents = flags.kvEventsEndpoint === undefined ? undefined : await publishKvEvents(engine, {
    endpoint: flags.kvEventsEndpoint,
    topic: flags.kvEventsTopic ?? `kv@${hostname()}@${servedModelName}`,
    ...(flags.kvEventsReplayEndpoint !== undefined && { replayEndpoint: flags.kvEventsReplayEndpoint }),
  });
  const { app, ctx } = buildApp({
    engine,
    tokenizer: model.tokenizer,
    options: {
      servedModelName,
      maxModelLen: engine.info.maxModelLen,
      apiKey: flags.apiKey,
      maxPendingRequests: flags.maxPendingRequests,
      slowClientTimeoutMs: 30_000,
      bodyLimitBytes: 8 * 2 ** 20,
      chatTemplate,
      reasoningParser: flags.reasoningParser,
      toolCallParser: flags.toolCallParser,
    },
  });
  try {
    await app.listen({ host: flags.host, port: flags.port });
  } catch (err) {
    await engine.close();
    const code = (err as { code?: string }).code;
    const why = code === 'EADDRINUSE' ? 'the address is already in use' : code === 'EACCES' ? 'permission denied' : code === 'EADDRNOTAVAIL' ? 'no such address on this machine' : (err as Error).message;
    throw new InvalidArgumentError(`cannot listen on ${flags.host}:${flags.port}: ${why} (--host, --port)`);
  }
  const address = app.server.address();
  const where = typeof address === 'object' && address ? `${address.address}:${address.port}` : String(address);
  console.error(`loom: serving ${servedModelName} on http://${where} (${engine.info.numBlocks} KV blocks of ${engine.info.blockSize} tokens, context ${engine.info.maxModelLen})`);

  // one line every 10 s while busy
  let lastLog = Date.now();
  const ticker = setInterval(() => {
    const stats = engine.stats;
    const elapsed = (Date.now() - lastLog) / 1000;
    lastLog = Date.now();
    const tokens = ctx.metrics.tokensSinceLog;
    ctx.metrics.tokensSinceLog = 0;
    if (ctx.inFlight === 0 && tokens === 0) return;
    console.error(
      `loom: ${(tokens / elapsed).toFixed(1)} tokens/s generated, ${stats?.numRunning ?? 0} running, ${stats?.numWaiting ?? 0} waiting, KV cache ${((stats?.kvCacheUsage ?? 0) * 100).toFixed(1)}%`,
    );
  }, 10_000);
  ticker.unref();

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    ctx.draining = true;
    console.error(`loom: ${signal}: no new requests; ${ctx.inFlight} in flight get ${flags.shutdownTimeout}s to finish`);
    const deadline = setTimeout(() => void engine.close(), flags.shutdownTimeout * 1000); // aborts what is left
    deadline.unref();
    await app.close(); // stops accepting, waits for in-flight responses
    clearTimeout(deadline);
    await engine.close();
    await kvEvents?.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

function defaultModelName(model: string): string {
  if (model.startsWith('hf:')) return model.slice(3).split(':')[0]!;
  const base = model.replace(/\/+$/, '').split('/').pop() ?? model;
  if (!base) throw new InvalidArgumentError('--model is empty');
  return base.replace(/\.gguf$/i, '');
}
