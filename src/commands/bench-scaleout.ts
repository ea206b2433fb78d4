// `loom bench scaleout`: N local replicas, round robin vs prefix-aware routing on KV events.
import { Command, Option } from 'commander';
import { BENCH_MODELS_DIR, ensureBenchModel } from '../bench/make-model.js';
import { ROUTING_POLICIES, runScaleout } from '../bench/scaleout.js';
import type { PolicyReport, ScaleoutOptions } from '../bench/scaleout.js';
import { fmt, table } from '../bench/table.js';
import { openGGUF } from '../model/gguf.js';
import { intArg } from './bench-args.js';

interface ScaleoutFlags {
  model?: string;
  replicas: number;
  threads: number;
  kvCacheMemory: string;
  conversations: number;
  groups: number;
  systemTokens: number;
  turns: number;
  userTokens: number;
  outputTokens: number;
  concurrency: number;
  seed: number;
  json?: boolean;
}

export function benchScaleoutCommand(): Command {
  return new Command('scaleout')
    .description(
      'start N local loom serve replicas (small KV caches, KV events on) and replay a multi-turn, shared-prefix workload ' +
        'through round-robin and prefix-aware routing (the replica whose KV events show the longest cached prefix); ' +
        'reports TTFT and prefix-cache hit rate per policy. A measuring aid: the production router is the inference extension EPP.',
    )
    .option('--model <file>', 'GGUF to serve (default: the generated SmolLM2-135M-shaped Q8_0)')
    .addOption(new Option('--replicas <n>', 'replicas').default(2).argParser(intArg('replicas')))
    .addOption(new Option('--threads <n>', 'compute threads per replica').default(1).argParser(intArg('threads')))
    .option('--kv-cache-memory <size>', 'KV cache per replica: small, so one replica cannot hold every conversation', '40MiB')
    .addOption(new Option('--conversations <n>', 'conversations').default(16).argParser(intArg('conversations')))
    .addOption(new Option('--groups <n>', 'distinct system prompts shared by the conversations').default(4).argParser(intArg('groups')))
    .addOption(new Option('--system-tokens <n>', 'tokens of each system prompt').default(384).argParser(intArg('system-tokens')))
    .addOption(new Option('--turns <n>', 'turns per conversation').default(4).argParser(intArg('turns')))
    .addOption(new Option('--user-tokens <n>', 'tokens of each user message').default(48).argParser(intArg('user-tokens')))
    .addOption(new Option('--output-tokens <n>', 'tokens of each answer').default(16).argParser(intArg('output-tokens')))
    .addOption(new Option('--concurrency <n>', 'conversations in flight at once').default(4).argParser(intArg('concurrency')))
    .addOption(new Option('--seed <s>', 'seed of the workload').default(0).argParser(intArg('seed', 0)))
    .option('--json', 'print one JSON object instead of the table')
    .action(async (f: ScaleoutFlags) => {
      const log = (line: string) => process.stderr.write(line + '\n');
      const model = f.model ?? ensureBenchModel(BENCH_MODELS_DIR, { shape: 'smollm2-135m', type: 'q8_0', seed: 0 }, log).path;
      const gguf = openGGUF(model);
      const tokens = gguf.metadata.get('tokenizer.ggml.tokens');
      const vocabSize = Array.isArray(tokens) ? tokens.length : 32000;
      gguf.close();
      const o: ScaleoutOptions = {
        model, vocabSize, replicas: f.replicas, threadsPerReplica: f.threads, kvCacheMemory: f.kvCacheMemory, blockSize: 16,
        conversations: f.conversations, groups: f.groups, systemTokens: f.systemTokens, turns: f.turns, userTokens: f.userTokens,
        outputTokens: f.outputTokens, concurrency: f.concurrency, seed: f.seed,
      };
      const reports: PolicyReport[] = [];
      for (const policy of ROUTING_POLICIES) {
        log(`loom bench scaleout: ${policy}, ${f.replicas} replicas…`);
        reports.push(await runScaleout(o, policy, (line) => (/listening|serving|SIGTERM/.test(line) ? undefined : log(line))));
      }
      if (f.json) return void process.stdout.write(JSON.stringify({ options: o, reports }) + '\n');
      const rows = [['policy', 'requests', 'failed', 'TTFT median ms', 'TTFT p99 ms', 'TTFT mean ms', 'E2E mean ms', 'prefix hit rate', 'cached blocks at pick', 'duration s']];
      for (const r of reports) {
        rows.push([r.policy, String(r.requests), String(r.failures), fmt(r.ttftMs.median), fmt(r.ttftMs.p99), fmt(r.ttftMs.mean), fmt(r.e2eMeanMs), `${(100 * r.hitRate).toFixed(1)}%`, fmt(r.routedCachedBlocks), fmt(r.durationS)]);
      }
      const [rr, pa] = reports;
      const ratio = rr && pa ? `prefix-aware vs round robin: TTFT median ${fmt(pa.ttftMs.median / rr.ttftMs.median)}×, mean ${fmt(pa.ttftMs.mean / rr.ttftMs.mean)}×, hit rate ${(100 * rr.hitRate).toFixed(1)}% → ${(100 * pa.hitRate).toFixed(1)}%` : '';
      process.stdout.write(`${model}: ${f.replicas} replicas × ${f.threads} threads, KV ${f.kvCacheMemory} each; ${f.conversations} conversations × ${f.turns} turns over ${f.groups} system prompts of ${f.systemTokens} tokens\n${table(rows)}\n${ratio}\n`);
    });
}
